"""Shared fixtures, and the two test tiers.

The quick tier (``python -m pytest -m "not slow"``) holds the unit tests: no training or evaluation run end
to end, no subprocess or worker process, no embedded or real model (the random tiny model is fine), none
of ALFWorld's TextWorld games, and about a second or less each on a 2-core machine. Everything
else is marked ``slow`` here, by file (`SLOW_FILES`) or by test function (`SLOW_TESTS`, every parameter of
it), or with ``@pytest.mark.slow`` in the test file. ``bash scripts/test.sh`` (CI) runs both tiers.
docs/contributing.md says how to choose.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("SEEDBENCH_PROGRESS", "0")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SLOW_FILES = {
    "test_agent_contract.py", "test_alfworld.py", "test_benchmark_scripts.py", "test_distributed.py",
    "test_env_pool.py", "test_experiment.py", "test_gpu_check.py", "test_install.py", "test_plugin_env.py",
    "test_quickstart_speed.py", "test_ray_cluster.py", "test_run_start.py", "test_run_state.py",
    "test_search_seed.py", "test_seed_learning.py", "test_sft_analyzer.py", "test_starting_model.py",
    "test_threads.py", "test_trainer.py", "test_update_benchmarks.py", "test_viewer.py", "test_vlm_training.py",
    "test_warm_start.py", "test_webshop_leaderboard.py",
}
"""Test modules that are end to end as a whole (runs, subprocesses, worker pools, installs)."""

SLOW_TESTS = {
    "test_analysis.py": {"test_a_real_48_token_cut_of_the_embedded_models_answer"},
    "test_async_rollout.py": {"test_env_latency_overlaps_with_threads", "test_hf_engine_greedy_matches_lockstep"},
    "test_bf16_update.py": {"test_weights_are_cast_once_per_mini_batch"},
    "test_cards.py": {"test_deals_follow_gym_cards_and_splits_are_disjoint",
                      "test_unfiltered_points24_deals_include_unsolvable_hands", "test_frames"},
    "test_cli.py": {"test_import_seedbench_is_light"},
    "test_config.py": {"test_sokoban_episodes_run_to_the_configured_cap_and_summary_says_so",
                       "test_eval_of_a_run_reproduces_its_last_eval_record"},
    "test_console_messages.py": {"test_a_dead_env_worker_prints_one_warning_line",
                                 "test_eval_of_a_seed_run_does_not_print_the_stage1_training_warning",
                                 "test_a_non_zero_torchrun_rank_prints_neither_the_stage1_warning_nor_run_complete"},
    "test_fidelity.py": {"test_the_update_scores_at_the_rollout_temperature_and_checks_engine_log_probs_there"},
    "test_frozenlake.py": {"test_one_grpo_iteration_on_the_tiny_model"},
    "test_generation_paths.py": {"test_greedy_outputs_equal_the_plain_path", "test_sampled_logprobs_equal_the_trainers",
                                 "test_per_prompt_prefill_cache_equals_the_padded_batchs",
                                 "test_embedded_smollm2_static_shared_path"},
    "test_gigpo.py": {"test_gigpo_learns_the_rewarded_action"},
    "test_leaderboard.py": {"test_validate_rejects_bad_submissions_with_field_paths",
                            "test_build_is_deterministic_and_separates_paper_rows"},
    "test_logprob_check.py": {"test_stale_engine_weights_are_flagged_until_synced"},
    "test_minigrid_env.py": {"test_one_grpo_iteration_on_the_tiny_model"},
    "test_policy.py": {"test_trained_run_directory_evaluates"},
    "test_provenance.py": {"test_a_real_tiny_run_records_its_provenance_and_passes_leaderboard_validation"},
    "test_report.py": {"test_load_results_is_one_tidy_table", "test_results_csv_round_trips",
                       "test_report_is_deterministic", "test_report_html_renders_in_headless_chromium",
                       "test_importing_report_does_not_load_matplotlib_or_pandas"},
    "test_search_server.py": {"test_a_silent_connection_is_closed_after_the_read_timeout"},
    "test_seed.py": {"test_every_registered_agent_runs_one_iteration",
                     "test_self_analysis_runs_under_a_progress_bar_of_its_decode_steps"},
    "test_sokoban_vision.py": {"test_tiny_run_on_sokoban_vision_stores_frames_by_reference"},
    "test_stats.py": {"test_bootstrap_ci_covers_the_true_mean_at_about_95_percent"},
    "test_tracking.py": {"test_every_sink_holds_the_jsonl_values", "test_resume_continues_the_same_tracked_runs",
                         "test_a_tiny_run_with_track_tensorboard_logs_every_metric_of_metrics_jsonl"},
    "test_untrusted_text.py": {"test_paper_links_must_parse_as_plain_web_urls"},
    "test_update_paths.py": {"test_first_forward_and_engine_old_logprobs_equal_the_scoring_pass",
                             "test_old_logprobs_fall_back_to_the_scoring_pass",
                             "test_every_update_reports_the_seconds_of_each_pass"},
    "test_vision_contract.py": {"test_frames_survive_worker_processes"},
    "test_webshop_env.py": {"test_runs_in_the_worker_pool"},
}
"""Test functions (by name, every parameter) of otherwise quick modules that belong to the slow tier."""


def is_slow(file_name: str, function_name: str, node_id: str) -> bool:
    """The tier rule of this file; a node id naming ALFWorld (a registry-generated parameter) is slow."""
    return file_name in SLOW_FILES or function_name in SLOW_TESTS.get(file_name, ()) or "alfworld" in node_id


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_slow(item.path.name, getattr(item, "originalname", item.name), item.nodeid):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for the test: on two shared, oversubscribed cores the model-heavy tests
    (SEED, stage 1, VLMs) run many times faster with one. Modules opt in with
    ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def free_port() -> int:
    """A local TCP port nothing listens on now (for a server or a process group's store)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def script_module():
    """``script_module("name")``: the module of ``scripts/name.py``, loaded from its file (scripts/ is not a
    package, so the tests of a script import it this way)."""
    import importlib.util

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from seedbench.models.tiny import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="session", autouse=True)
def alfworld_data(request, tmp_path_factory):
    """Point the ALFWorld env at a small generated test pool when no data is configured, so
    registry-generated tests can make `alfworld` on a fresh machine. Built only when a selected test names
    ALFWorld (all of them are in the slow tier), so the quick tier never generates games."""
    import importlib.util

    if os.environ.get("SEEDBENCH_ALFWORLD_DATA") or importlib.util.find_spec("alfworld") is None:
        return
    if not any("alfworld" in item.nodeid for item in request.session.items):
        return
    from seedbench.envs.alfworld.data import build_test_pool

    cache = getattr(request.config, "cache", None)
    root = cache.mkdir("alfworld") if cache is not None else tmp_path_factory.mktemp("alfworld")
    os.environ["SEEDBENCH_ALFWORLD_DATA"] = str(build_test_pool(root, workers=2))


BOXOBAN_TEST_LEVELS = """; 0
##########
##########
##  @ ####
##  $ ####
##    ####
##  . ####
##########
##########
##########
##########

; 1
##########
#.      ##
#  $    ##
#   @   ##
#       ##
# $    .##
#       ##
#       ##
#       ##
##########
"""
"""Two hand-written 10x10 levels in the Boxoban file format (tests/test_sokoban_vision.py parses more)."""


@pytest.fixture(scope="session", autouse=True)
def boxoban_levels(tmp_path_factory):
    """Point `sokoban-vision-boxoban` at a small hand-written level file when no Boxoban data is
    configured, so registry-generated tests can make it (seedbench never downloads the real levels)."""
    if os.environ.get("SEEDBENCH_BOXOBAN_LEVELS"):
        return
    path = tmp_path_factory.mktemp("boxoban") / "000.txt"
    path.write_text(BOXOBAN_TEST_LEVELS)
    os.environ["SEEDBENCH_BOXOBAN_LEVELS"] = str(path)
