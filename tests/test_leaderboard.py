"""Leaderboards: submit from runs, validation of bad submissions, deterministic builds."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

import seedbench.leaderboard as lb
from seedbench.leaderboard.schema import board_key
from seedbench.provenance import task_list_hash
from seedbench.report import synthetic

REPO = Path(__file__).resolve().parent.parent
BOARD = board_key("choice", "seedbench/TwoChoice-v0", "tiny", {"iterations": 6})
TASK_HASH = task_list_hash(synthetic.task_list("test", 16), synthetic.data_checksum("choice"))
METRIC = "eval/test/success_micro"


def make_board(root: Path, pinned: bool = True) -> Path:
    path = root / BOARD
    path.mkdir(parents=True)
    board = {"title": "TwoChoice · tiny · 6 updates", "env": "choice", "env_id": "seedbench/TwoChoice-v0",
             "model": "tiny", "budget": {"iterations": 6}, "splits": ["test"], "primary_metric": METRIC,
             "metrics": [METRIC, "eval/test/success_macro"], "min_seeds": 3,
             "eval_task_hash": {"test": TASK_HASH if pinned else None}}
    (path / "board.yaml").write_text(yaml.safe_dump(board, sort_keys=False))
    return path


def make_runs(root: Path, agent: str, seeds=(0, 1, 2)) -> Path:
    for seed in seeds:
        synthetic.write_run(root / agent / f"s{seed}", env="choice", agent=agent, seed=seed, iterations=6,
                            env_id="seedbench/TwoChoice-v0")
    return root / agent


@pytest.fixture()
def boards(tmp_path) -> Path:
    root = tmp_path / "leaderboards"
    make_board(root)
    runs = tmp_path / "runs"
    for agent in ("grpo", "seed"):
        lb.submit([make_runs(runs, agent)], root=root, method=f"{agent.upper()} (seedbench)", authors=["Ada"],
                  compute="CPU, 1 minute", when=__import__("datetime").date(2026, 1, 2))
    return root


def submission(root: Path, agent: str = "seed") -> Path:
    return root / BOARD / f"2026-01-02_{agent}_tiny"


def problems(root: Path) -> list[str]:
    return [str(p) for p in lb.load_catalogue(root).problems]


def test_submit_writes_a_valid_submission(boards):
    folder = submission(boards)
    summary = json.loads((folder / "summary.json").read_text())
    meta = yaml.safe_load((folder / "metadata.yaml").read_text())
    assert summary["board"] == BOARD and summary["source"] == "seedbench"
    assert [s["seed"] for s in summary["seeds"]] == [0, 1, 2]
    assert set(summary["seeds"][0]["final"]) == {METRIC, "eval/test/success_macro"}
    assert summary["seeds"][0]["curve"]["trajectories"][0] == 0
    assert summary["eval_task_hash"] == {"test": TASK_HASH}
    assert {"num_tasks", "max_steps", "temperature", "data_checksum"} <= set(summary["protocol"])
    assert meta["reproduced"] is False and meta["source"] == "seedbench"
    assert problems(boards) == []


def test_submit_refuses_mixed_runs_and_unknown_boards(boards, tmp_path):
    runs = tmp_path / "runs"
    with pytest.raises(lb.SubmitError, match="one env × agent × model"):
        lb.submit([runs], root=boards, method="x", authors=["a"])
    with pytest.raises(lb.SubmitError, match="unknown board"):
        lb.submit([runs / "seed"], root=boards, board="nope", method="x", authors=["a"])
    with pytest.raises(lb.SubmitError, match="already exists"):
        lb.submit([runs / "seed"], root=boards, method="x", authors=["a"], when=__import__("datetime").date(2026, 1, 2))


def _edit_summary(folder: Path, edit) -> None:
    data = json.loads((folder / "summary.json").read_text())
    edit(data)
    (folder / "summary.json").write_text(json.dumps(data))


def _edit_meta(folder: Path, edit) -> None:
    data = yaml.safe_load((folder / "metadata.yaml").read_text())
    edit(data)
    (folder / "metadata.yaml").write_text(yaml.safe_dump(data))


def _missing_seeds(f):
    _edit_summary(f, lambda d: d.__setitem__("seeds", d["seeds"][:2]))


def _duplicate_seed(f):
    _edit_summary(f, lambda d: d["seeds"][2].__setitem__("seed", 0))


def _mismatched_task_list(f):
    _edit_summary(f, lambda d: d["eval_task_hash"].__setitem__("test", "ffffffffffffffff"))


def _unknown_board(f):
    _edit_summary(f, lambda d: d.__setitem__("board", "alfworld-v0__gpt-5__1it"))


def _non_numeric_metric(f):
    _edit_summary(f, lambda d: d["seeds"][1]["final"].__setitem__(METRIC, "0.8"))


def _percentage_not_fraction(f):
    _edit_summary(f, lambda d: d["seeds"][0]["final"].__setitem__(METRIC, 80.0))


def _missing_metric(f):
    _edit_summary(f, lambda d: d["seeds"][2]["final"].pop("eval/test/success_macro"))


def _oversized_file(f):
    (f / "curves.json").write_bytes(b"0" * (2 << 20))


def _artifact_escapes(f):
    _edit_meta(f, lambda d: d.__setitem__("artifacts", ["../../../etc/passwd"]))


def _symlink_escapes(f):
    os.symlink("/etc/hostname", f / "notes.txt")


def _bad_json(f):
    (f / "summary.json").write_text('{"schema": "seedbench.submission/1",')


def _missing_author(f):
    _edit_meta(f, lambda d: d.pop("authors"))


def _reproduced_not_bool(f):
    _edit_meta(f, lambda d: d.__setitem__("reproduced", "yes"))


def _wrong_model(f):
    _edit_summary(f, lambda d: d.__setitem__("model", "smollm2-135m"))


def _wrong_budget(f):
    _edit_summary(f, lambda d: d["budget"].__setitem__("iterations", 5))


def _no_protocol_temperature(f):
    _edit_summary(f, lambda d: d["protocol"].pop("temperature"))


def _null_data_checksum(f):
    _edit_summary(f, lambda d: d["protocol"].__setitem__("data_checksum", None))


def _task_ids_edited(f):  # another task list under the old hash
    _edit_summary(f, lambda d: d["eval_task_ids"]["test"].__setitem__(0, "test-999"))


def _data_checksum_edited(f):  # the same ids on other data
    _edit_summary(f, lambda d: d["protocol"].__setitem__("data_checksum", "0123456789abcdef"))


def _no_task_ids(f):
    _edit_summary(f, lambda d: d.pop("eval_task_ids"))


def _bad_curve(f):
    _edit_summary(f, lambda d: d["seeds"][0]["curve"][METRIC].pop())


BAD = [
    (_missing_seeds, "summary.json: seeds: missing seeds: 2 distinct seed(s) given"),
    (_duplicate_seed, "summary.json: seeds[2].seed: seed 0 appears twice"),
    (_mismatched_task_list, "summary.json: eval_task_hash.test: mismatched task list"),
    (_unknown_board, "summary.json: board: unknown board 'alfworld-v0__gpt-5__1it'"),
    (_non_numeric_metric, 'summary.json: seeds[1].final["eval/test/success_micro"]: expected a number in [0, 1], got \'0.8\' (str)'),
    (_percentage_not_fraction, 'seeds[0].final["eval/test/success_micro"]: expected a success rate in [0, 1] (a fraction, not a percentage)'),
    (_missing_metric, 'seeds[2].final["eval/test/success_macro"]: missing'),
    (_oversized_file, "curves.json: file is 2,097,152 bytes; the limit is 1,048,576"),
    (_artifact_escapes, "metadata.yaml: artifacts[0]: path '../../../etc/passwd' escapes the submission folder"),
    (_symlink_escapes, "notes.txt: symlink points outside the submission folder"),
    (_bad_json, "summary.json: not valid JSON"),
    (_missing_author, "metadata.yaml: authors: required field is missing"),
    (_reproduced_not_bool, "metadata.yaml: reproduced: expected true or false"),
    (_wrong_model, "summary.json: model: board 'twochoice-v0__tiny__6it' is for base model 'tiny'"),
    (_wrong_budget, "summary.json: budget.iterations: board 'twochoice-v0__tiny__6it' requires 6, got 5"),
    (_no_protocol_temperature, "summary.json: protocol.temperature: required field of the protocol card is missing"),
    (_null_data_checksum, "summary.json: protocol.data_checksum: expected the env's data checksum (a non-empty string), got None"),
    (_task_ids_edited, f"summary.json: eval_task_hash.test: '{TASK_HASH}' is not the hash of eval_task_ids.test and protocol.data_checksum"),
    (_data_checksum_edited, f"summary.json: eval_task_hash.test: '{TASK_HASH}' is not the hash of eval_task_ids.test"),
    (_no_task_ids, "summary.json: eval_task_ids: required field is missing"),
    (_bad_curve, 'seeds[0].curve["eval/test/success_micro"]: expected a list of'),
]


@pytest.mark.parametrize("break_it, message", BAD, ids=[f.__name__.strip("_") for f, _ in BAD])
def test_validate_rejects_bad_submissions_with_field_paths(boards, break_it, message, capsys):
    folder = submission(boards)
    break_it(folder)
    found = problems(boards)
    assert any(message in p for p in found), "\n".join(found)
    prefix = f"{BOARD}/2026-01-02_seed_tiny/"
    assert all(p.startswith(prefix) for p in found), found  # only the broken submission is blamed
    # the command line says the same and fails
    assert lb.main(["validate", "--root", str(boards)]) == 1
    out = capsys.readouterr().out
    assert message in out and "Traceback" not in out


def test_validate_rejects_bad_folder_names_and_boardless_folders(boards):
    shutil.copytree(submission(boards), boards / BOARD / "latest-seed")
    orphan = boards / "no-such-board" / "2026-01-02_seed_tiny"
    shutil.copytree(submission(boards), orphan)
    found = problems(boards)
    assert any("latest-seed: folder name must be <YYYY-MM-DD>_<agent>_<model>" in p for p in found), found
    assert any(p.startswith("no-such-board/board.yaml: missing") for p in found), found
    assert any("unknown board 'no-such-board'" in p for p in found), found


def test_submissions_of_one_board_must_share_the_task_list(tmp_path):
    root = tmp_path / "lb"
    make_board(root, pinned=False)
    runs = tmp_path / "runs"
    for agent in ("grpo", "seed"):
        lb.submit([make_runs(runs, agent)], root=root, method=agent, authors=["a"],
                  when=__import__("datetime").date(2026, 1, 2))
    assert problems(root) == []
    _mismatched_task_list(submission(root, "seed"))
    assert any("differs from" in p and "2026-01-02_grpo_tiny" in p for p in problems(root))


def test_paper_reported_rows_are_validated(boards):
    folder = boards / BOARD / "2026-01-03_gigpo_tiny"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({
        "schema": "seedbench.submission/1", "board": BOARD, "source": "paper-reported", "agent": "gigpo",
        "model": "tiny", "reported": {METRIC: {"value": "86.7", "std": 0.017, "n_seeds": 3, "average": "micro"}}}))
    (folder / "metadata.yaml").write_text(yaml.safe_dump({
        "method": "GiGPO", "authors": ["x"], "paper": "ftp://nope", "compute": "?", "reproduced": False,
        "source": "paper-reported"}))
    found = problems(boards)
    assert any('reported["eval/test/success_micro"].value: expected a number in [0, 1]' in p for p in found), found
    assert any("metadata.yaml: paper: expected an http(s) URL or null" in p for p in found), found


def test_build_is_deterministic_and_separates_paper_rows(boards):
    folder = boards / BOARD / "2026-01-03_gigpo_tiny"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({
        "schema": "seedbench.submission/1", "board": BOARD, "source": "paper-reported", "agent": "gigpo",
        "model": "tiny", "reported": {METRIC: {"value": 0.867, "std": 0.017, "n_seeds": 3, "average": "micro"}}}))
    (folder / "metadata.yaml").write_text(yaml.safe_dump({
        "method": "GiGPO (paper)", "authors": ["x"], "paper": "https://arxiv.org/abs/2505.10978",
        "compute": "as reported", "reproduced": False, "source": "paper-reported"}))
    assert lb.main(["build", "--root", str(boards)]) == 0
    first = {name: (boards / name).read_bytes() for name in ("README.md", "leaderboard.csv", "index.html")}
    lb.build(boards)
    assert {name: (boards / name).read_bytes() for name in first} == first
    readme = first["README.md"].decode()
    ours, theirs = readme.split("### Paper-reported")
    assert "SEED (seedbench)" in ours and "GRPO (seedbench)" in ours and "GiGPO (paper)" not in ours
    assert "GiGPO (paper)" in theirs and "86.7 ± 1.7 (micro, 3 seeds)" in theirs
    assert "| 1 | SEED (seedbench) |" in ours  # ranked by the primary metric; synthetic SEED is better
    csv_lines = first["leaderboard.csv"].decode().splitlines()
    assert csv_lines[0].startswith("board,source,submission,method")
    assert sum(",paper-reported," in line for line in csv_lines) == 1


def test_build_refuses_invalid_submissions_and_writes_nothing(boards, capsys):
    _non_numeric_metric(submission(boards))
    assert lb.main(["build", "--root", str(boards)]) == 1
    assert "nothing was written" in capsys.readouterr().out
    assert not (boards / "README.md").exists()


def test_cli_usage_errors_return_2(tmp_path, capsys):
    assert lb.main(["validate", "--root", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().out.startswith("seedbench leaderboard: error: no leaderboards directory")


def test_shipped_leaderboards_validate_and_are_built(tmp_path):
    """The repository's boards (paper-reported seed rows) validate, and the committed README/CSV/HTML are
    exactly what `seedbench leaderboard build` produces from them."""
    copy = tmp_path / "leaderboards"
    shutil.copytree(REPO / "leaderboards", copy)
    assert problems(copy) == []
    lb.build(copy)
    for name in ("README.md", "leaderboard.csv", "index.html"):
        assert (copy / name).read_bytes() == (REPO / "leaderboards" / name).read_bytes(), \
            f"leaderboards/{name} is stale: run `seedbench leaderboard build`"
    readme = (copy / "README.md").read_text()
    assert "91.8 (macro, 1 seed)" in readme and "75.0 (micro, 1 seed)" in readme  # SEED paper, ALFWorld
    assert "86.7 ± 1.7 (3 seeds)" in readme and "67.4 ± 4.5 (3 seeds)" in readme  # GiGPO paper


def test_paper_names_of_the_seed_ablations_are_aliases_and_boards_show_one_name(boards, tmp_path):
    """The SEED paper's ablation names resolve to the catalogue entries (same overrides); a run started under
    an alias records the catalogue name; a paper row filed under the paper's name lands on the board under
    the catalogue name, next to seedbench runs of the same method."""
    from seedbench.config import build_config, validate_config
    from seedbench.registry import canonical_agent, resolve_agent

    pairs = {"seed-no-analyzer-sft": "seed-no-sft", "seed-no-self-evolving": "seed-frozen-analyzer",
             "seed-no-on-policy-skills": "seed-static-skills"}
    for paper, ours in pairs.items():
        assert resolve_agent(paper) is resolve_agent(ours) and canonical_agent(paper) == ours
    assert canonical_agent("someone-elses-agent") == "someone-elses-agent"
    config = build_config(overrides={"env": "choice", "agent": "seed-no-self-evolving", "model": {"name": "tiny"}})
    assert validate_config(config).agent == "seed-frozen-analyzer"
    folder = boards / BOARD / "2026-01-03_seed-no-self-evolving_tiny"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps({
        "schema": "seedbench.submission/1", "board": BOARD, "source": "paper-reported", "agent": "seed-no-self-evolving",
        "model": "tiny", "reported": {METRIC: {"value": 0.87, "std": None, "n_seeds": 1, "average": "unknown"}}}))
    (folder / "metadata.yaml").write_text(yaml.safe_dump({
        "method": "SEED w/o self-evolving (paper ablation)", "authors": ["x"], "paper": "https://arxiv.org/abs/2607.14777",
        "compute": "as reported", "reproduced": False, "source": "paper-reported"}))
    assert lb.main(["build", "--root", str(boards)]) == 0
    csv_lines = (boards / "leaderboard.csv").read_text().splitlines()
    paper = [line for line in csv_lines if ",paper-reported," in line]
    assert len(paper) == 1 and ",seed-frozen-analyzer," in paper[0] and "no-self-evolving_tiny" in paper[0]


def test_paper_rows_under_different_step_limits_are_never_one_table():
    from seedbench.leaderboard.build import protocol_text, step_limit_groups
    from seedbench.leaderboard.catalogue import load_catalogue as moved
    from seedbench.leaderboard.validate import load_catalogue as kept

    assert moved is kept  # the old import path still works
    rows = [{"max_steps": 50, "n": 1}, {"max_steps": None, "n": 2}, {"max_steps": 30, "n": 3}, {"max_steps": 50, "n": 4}]
    assert [(limit, [r["n"] for r in group]) for limit, group in step_limit_groups(rows)] == [
        (30, [3]), (50, [1, 4]), (None, [2])]
    assert protocol_text({"max_steps": 30, "seeds": None}) == "step limit 30, seeds ?"
    catalogue = kept(Path(__file__).parents[1] / "leaderboards")
    assert not catalogue.problems
    board = [s for s in catalogue.all_submissions() if s.board_name == "alfworld-v0__qwen2.5-3b__150it"
             and s.source == "paper-reported"]
    limits = {s.summary["agent"]: (s.summary.get("protocol") or {}).get("max_steps") for s in board}
    assert {a: limits[a] for a in ("seed", "sdar", "retire-opd")} == {"seed": 30, "sdar": 50, "retire-opd": None}


def test_a_paper_protocol_with_a_wrong_type_is_a_problem():
    from seedbench.leaderboard.submission import _Checker, _check_paper

    c = _Checker("x/summary.json")
    _check_paper({"reported": {"eval/reported/success": {"value": 0.5}}, "protocol": {"max_steps": "fifty", "gpus": 8}},
                 None, c)
    assert sorted(p.where for p in c.problems) == ["protocol.gpus", "protocol.max_steps"]


# ----------------------------------------------------------------------------------------------------
# A study's board: every arm of an experiment, from its run directories

STUDY_BOARD = "twochoice-v0__tiny__cpu-study"
STUDY_ARMS = {"grpo": ("grpo", {}), "control": ("grpo", {"optim.lr": 0}), "seed": ("seed", {}),
              "seed-no-opd": ("seed", {"algo.opd_coef": 0})}


def make_study(root: Path) -> Path:
    """An experiment's run directories as the driver leaves them (arm.json + a finished run)."""
    from seedbench.training.experiments.arm import write_arm

    for arm, (agent, overrides) in STUDY_ARMS.items():
        for seed in (0, 1, 2):
            run = root / f"choice__{arm}__tiny__s{seed}"
            write_arm(run, arm, agent, "study", overrides)
            synthetic.write_run(run, env="choice", agent=agent, seed=seed, iterations=6,
                                env_id="seedbench/TwoChoice-v0", final_success=0.95 if arm == "control" else None)
    return root


@pytest.fixture()
def study(tmp_path) -> tuple[Path, Path]:
    root = tmp_path / "leaderboards"
    shutil.copytree(REPO / "leaderboards", root)  # beside the shipped boards and their paper rows
    return root, make_study(tmp_path / "exp")


def _finals(exp: Path, arm: str) -> list[float]:
    return [json.loads((exp / f"choice__{arm}__tiny__s{s}" / "summary.json").read_text())["final"][METRIC]
            for s in (0, 1, 2)]


def test_submit_experiment_makes_one_valid_submission_per_arm_on_a_new_board(study, capsys):
    root, exp = study
    assert lb.main(["submit-experiment", str(exp), "--root", str(root), "--authors", "Ada", "--budget-label",
                    "cpu-study", "--method", "control=GRPO, lr 0 (control)", "--date", "2026-01-02"]) == 0
    assert "wrote 4 submission(s)" in capsys.readouterr().out
    board = yaml.safe_load((root / STUDY_BOARD / "board.yaml").read_text())
    assert board["budget"] == {"iterations": 6, "label": "cpu-study"} and board["baseline"] == "grpo"
    assert board["primary_metric"] == METRIC and board["eval_task_hash"] == {"test": TASK_HASH}
    names = sorted(p.name for p in (root / STUDY_BOARD).iterdir() if p.is_dir())
    assert names == sorted(f"2026-01-02_{arm}_tiny" for arm in ("control", "grpo", "seed", "seed-no-opd"))
    control = json.loads((root / STUDY_BOARD / "2026-01-02_control_tiny" / "summary.json").read_text())
    assert (control["arm"], control["agent"], control["overrides"]) == ("control", "grpo", {"optim.lr": 0})
    protocol = control["protocol"]
    assert (protocol["iterations"], protocol["tasks_per_batch"], protocol["group_size"], protocol["seeds"],
            protocol["max_steps"]) == (6, 4, 2, [0, 1, 2], 1)
    meta = yaml.safe_load((root / STUDY_BOARD / "2026-01-02_control_tiny" / "metadata.yaml").read_text())
    assert meta["method"] == "GRPO, lr 0 (control)" and meta["compute"].startswith("3 runs, 19 s of training")
    grpo = json.loads((root / STUDY_BOARD / "2026-01-02_grpo_tiny" / "summary.json").read_text())
    assert "arm" not in grpo  # a plain agent's row is an ordinary submission
    assert lb.main(["validate", "--root", str(root)]) == 0


def test_study_board_is_built_beside_the_paper_rows(study):
    root, exp = study
    lb.submit_experiment([exp], root=root, authors=["Ada"], budget_label="cpu-study", when=__import__("datetime").date(2026, 1, 2))
    lb.build(root)
    readme = (root / "README.md").read_text()
    assert "91.8 (macro, 1 seed)" in readme  # the shipped paper rows are still there
    board = readme.split("## choice · tiny · 6 updates · cpu-study")[1]
    ours = board.split("### Paper-reported")[0]
    table = [line for line in ours.splitlines() if line.startswith("| ") and not line.startswith("| rank")
             and not line.startswith("|--")]
    rows = {line.split(" | ")[1]: line for line in table}
    assert set(rows) == {"control", "grpo", "seed", "seed-no-opd"}
    assert "| grpo (arm control) |" in rows["control"] and "| baseline |" in rows["grpo"]
    # the learning arms are ranked by their mean; seed and seed-no-opd (the same synthetic runs) end level and share
    # rank 1, so grpo is 3rd; the lr=0 control, the highest mean here, comes last, unranked
    assert np.mean(_finals(exp, "control")) > np.mean(_finals(exp, "seed")) > np.mean(_finals(exp, "grpo"))
    assert _finals(exp, "seed") == _finals(exp, "seed-no-opd")
    assert [line.split(" | ")[0] for line in table] == ["| 1", "| 1", "| 3", "| control"]
    assert [line.split(" | ")[1] for line in table][2:] == ["grpo", "control"]
    assert "no-learning controls" in ours
    assert ("model tiny, step limit 1, updates 6, tasks/batch 4, group 2, eval tasks 16, eval temperature 0.4, "
            "seeds 0 1 2, commit 0000000000, set optim.lr=0") in rows["control"]
    csv_rows = [line.split(",") for line in (root / "leaderboard.csv").read_text().splitlines()
                if line.startswith(STUDY_BOARD) and f",{METRIC}," in line]
    means = {row[3]: float(row[8]) for row in csv_rows}  # method -> mean over seeds
    assert means["seed"] == pytest.approx(np.mean(_finals(exp, "seed")), abs=1e-6)
    assert means["control"] == pytest.approx(np.mean(_finals(exp, "control")), abs=1e-6)
    poi = {row[3]: float(row[14]) for row in csv_rows if row[14]}
    by_hand = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in _finals(exp, "seed") for b in _finals(exp, "grpo")])
    assert poi["seed"] == pytest.approx(by_hand) and "grpo" not in poi  # P(seed > grpo arm), not the control


def test_submit_experiment_writes_all_arms_or_none(study):
    root, exp = study
    when = __import__("datetime").date(2026, 1, 2)
    lb.submit_experiment([exp], root=root, authors=["Ada"], budget_label="cpu-study", when=when)
    shutil.rmtree(root / STUDY_BOARD / "2026-01-02_seed_tiny")
    with pytest.raises(lb.SubmitError, match="already exists"):
        lb.submit_experiment([exp], root=root, authors=["Ada"], budget_label="cpu-study", when=when)
    left = sorted(p.name for p in (root / STUDY_BOARD).iterdir() if p.is_dir())
    assert left == ["2026-01-02_control_tiny", "2026-01-02_grpo_tiny", "2026-01-02_seed-no-opd_tiny"]  # untouched
    with pytest.raises(lb.SubmitError, match="--method names arm"):
        lb.submit_experiment([exp], root=root, authors=["Ada"], methods={"sed": "typo"})
    synthetic.write_run(exp / "other-env", env="frozenlake", agent="grpo", iterations=6)
    with pytest.raises(lb.SubmitError, match="one env × base model"):
        lb.submit_experiment([exp], root=root, authors=["Ada"])


def test_an_arm_filed_under_another_name_is_a_problem(study):
    root, exp = study
    lb.submit_experiment([exp], root=root, authors=["Ada"], budget_label="cpu-study", when=__import__("datetime").date(2026, 1, 2))
    folder = root / STUDY_BOARD / "2026-01-02_control_tiny"
    folder.rename(folder.with_name("2026-01-02_grpo2_tiny"))
    found = problems(root)
    assert any("arm 'control' does not match the folder name (expected …_control_…)" in p for p in found), found
    _edit_summary(root / STUDY_BOARD / "2026-01-02_grpo2_tiny", lambda d: d.__setitem__("arm", "../x"))
    assert any("summary.json: arm: label '../x' must be" in p for p in problems(root))


def test_submit_experiment_usage_errors_are_one_line(study, capsys):
    root, exp = study
    assert lb.main(["submit-experiment", str(exp), "--root", str(root), "--authors", "A", "--method", "seed"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("seedbench leaderboard: error: --method expects ARM=NAME") and out.count("\n") == 1
    assert lb.main(["submit-experiment", str(exp / "nothing-here"), "--root", str(root), "--authors", "A"]) == 2
    assert lb.main(["submit-experiment", str(exp), "--root", str(root / "missing"), "--authors", "A"]) == 2
    assert "no leaderboards directory" in capsys.readouterr().out


def test_an_arm_with_fewer_seeds_than_the_board_asks_is_held_back_until_it_has_them(study, capsys):
    """A study in progress: the control has one complete seed. The new board asks for 3 (not for the fewest
    seeds of any arm, which would rank a one-seed arm among three-seed ones); the control is held back and
    named; it joins once its seeds are done."""
    root, exp = study
    for seed in (1, 2):
        (exp / f"choice__control__tiny__s{seed}" / "summary.json").unlink()  # unfinished runs
    assert lb.main(["submit-experiment", str(exp), "--root", str(root), "--authors", "Ada", "--budget-label",
                    "cpu-study", "--date", "2026-01-02"]) == 0
    out = capsys.readouterr().out
    assert "wrote 3 submission(s)" in out and "held back until they have 3 seeds: control (1 seed)" in out
    assert yaml.safe_load((root / STUDY_BOARD / "board.yaml").read_text())["min_seeds"] == 3
    assert not (root / STUDY_BOARD / "2026-01-02_control_tiny").exists()
    assert lb.main(["validate", "--root", str(root)]) == 0

    shutil.rmtree(exp)
    make_study(exp)  # the control's seeds are done
    result = lb.submit_experiment([exp], root=root, authors=["Ada"], budget_label="cpu-study", overwrite=True,
                                  when=__import__("datetime").date(2026, 1, 2))
    assert len(result.folders) == 4 and not result.held_back


def test_min_seeds_is_set_when_the_board_is_created_and_no_arm_below_it_is_submitted(study, capsys):
    root, exp = study
    assert lb.main(["submit-experiment", str(exp), "--root", str(root), "--authors", "Ada", "--min-seeds", "4"]) == 2
    out = capsys.readouterr().out
    assert out.startswith("seedbench leaderboard: error: no arm has the 4 complete seeds the board asks for")
    assert not any(p.name.startswith("choice") for p in root.iterdir())  # the new board is not left behind
    result = lb.submit_experiment([exp], root=root, authors=["Ada"], min_seeds=2)
    assert len(result.folders) == 4
    assert yaml.safe_load((result.folders[0].parent / "board.yaml").read_text())["min_seeds"] == 2
