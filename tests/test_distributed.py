"""Data-parallel training of one run (torch.distributed, gloo, world size 2) against one process.

The ranks are real processes started by ``torchrun`` (as ``python -m torch.distributed.run --standalone``),
each with one thread (``OMP_NUM_THREADS=1``); the one-process references run in the test process with one
thread. Three launches in all: the fixed-batch updates (ddp and fsdp in one launch), a run whose rank is
killed (ddp), and its resume (fsdp).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from seedbench.jsonio import read_jsonl
from seedbench.training.distributed import SampleLayout, SingleProcess

REPO = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
TINY = ["rollout.max_new_tokens=3", "rollout.tasks_per_batch=4", "rollout.group_size=2", "eval.num_tasks=4",
        "optim.mini_batch_size=8", "optim.micro_batch_size=4", "optim.lr=0.01"]


def _env() -> dict[str, str]:
    src = str(REPO / "src")
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": f"{src}{os.pathsep}{path}" if path else src}


def _run(cmd: list[str], timeout: float = 300) -> float:
    start = time.monotonic()
    result = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=timeout, cwd=REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return time.monotonic() - start


def _run_cli(out: Path, iterations: int, resume: bool = False) -> list[str]:
    return (["-m", "seedbench", "run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations",
             str(iterations), "--output", str(out)] + (["--resume"] if resume else []) + ["--set", *TINY])


# ----------------------------------------------------------------------------------------------------
# The pieces, in one process


def test_sample_layout_maps_global_minibatches_to_each_ranks_samples():
    # rank 1 of two holds global samples 4, 5, 6
    layout = SampleLayout(lengths=[3, 1, 4, 1, 5, 9, 2], counts=[4, 3], rank=1)
    assert layout.offset == 4
    assert layout.local([6, 0, 4, 2]) == [2, 0]
    assert layout.local([0, 1, 2, 3]) == []
    # micro-batches of 2: rank 0 has 3 members (2 passes), rank 1 has 1 (1 pass)
    assert layout.micro_batches([0, 1, 2, 5], 2) == 3
    one = SingleProcess().sample_layout([3, 1, 4])
    assert one.local([2, 0]) == [2, 0] and one.micro_batches([2, 0, 1], 2) == 2


_CYCLE_HOLDING_THE_GROUP = """
import sys
import torch.distributed as dist
from seedbench.training.distributed import DataParallel

class Holder:  # as an FSDP-sharded model: holds the group, lives in a reference cycle
    def __init__(self):
        self.group, self.me = dist.group.WORLD, self
    def __del__(self):
        print("holder freed while finalizing:", sys.is_finalizing(), flush=True)

group = DataParallel()
Holder()
group.close()
"""


def test_what_holds_a_destroyed_group_is_freed_before_interpreter_shutdown(tmp_path, free_port):
    """A process group that outlives `destroy_process_group` in a reference cycle (an FSDP-sharded model) was
    freed during interpreter shutdown, where gloo aborted a rank now and then; the exit hook frees it first."""
    env = {**_env(), "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(free_port)}
    result = subprocess.run([sys.executable, "-c", _CYCLE_HOLDING_THE_GROUP], env=env, capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "holder freed while finalizing: False" in result.stdout, result.stdout + result.stderr[-2000:]


def test_fsdp_pads_the_rank_with_fewer_micro_batches_and_shards_the_blocks(tiny_tokenizer):
    from seedbench.models.tiny import tiny_model
    from seedbench.training.fsdp import PassCountingLayout, ShardedDataParallel, transformer_blocks

    group = ShardedDataParallel.__new__(ShardedDataParallel)  # no process group needed for these pieces
    layout = PassCountingLayout(lengths=[3, 1, 4, 1, 5, 9, 2], counts=[4, 3], rank=1, group=group)
    # micro-batches of 2 over global samples 0, 1, 2 (rank 0) and 5 (rank 1): rank 0 takes 2 passes, rank 1 one
    assert layout.micro_batches([0, 1, 2, 5], 2) == 3 and group._passes == (1, 2)
    assert layout.micro_batches([0, 1], 2) == 1 and group._passes == (0, 1)  # rank 1 has no member: one padding pass
    blocks = transformer_blocks(tiny_model(tiny_tokenizer))
    assert [type(b).__name__ for b in blocks] == ["LlamaDecoderLayer", "LlamaDecoderLayer"]
    lora = SimpleNamespace(merge_and_unload=None, get_base_model=None)  # what `is_lora` recognises
    with pytest.raises(Exception, match="use distributed.strategy=ddp"):
        group.shard_model(lora)


def _rank(rank: int, world: int, others: list | None = None):
    """A `DataParallel` of the given rank without a process group; `others` = what all_gather returns."""
    from seedbench.training.distributed import DataParallel

    group = DataParallel.__new__(DataParallel)
    group.rank, group.world_size, group.is_main = rank, world, rank == 0
    group.all_gather_object = lambda value: [value if i == rank else others[i] for i in range(world)]
    return group


def test_each_rank_plays_whole_task_groups_with_global_ids():
    played = []

    def run_episodes(envs, env, engine, tokenizer, tasks, group_size=1, episode_prefix=""):
        played.append(list(tasks))  # ids as the rollout gives them: local task index, member
        return [SimpleNamespace(episode_id=f"{episode_prefix}{t}-{m}", group_id=t, task=task)
                for t, task in enumerate(tasks) for m in range(group_size)], None

    tasks = ["a", "b", "c", "d", "e"]
    trajs, _ = _rank(1, 2).shard_rollout(run_episodes)(None, None, None, None, tasks, group_size=2, episode_prefix="it3-")
    assert played == [["d", "e"]]  # rank 0 plays a, b, c (the first n % world ranks take one more)
    assert [(t.episode_id, t.group_id, t.task) for t in trajs] == [
        ("it3-3-0", 3, "d"), ("it3-3-1", 3, "d"), ("it3-4-0", 4, "e"), ("it3-4-1", 4, "e")]
    with pytest.raises(Exception, match="cannot be shared by 2 ranks"):
        _rank(0, 2).shard_rollout(run_episodes)(None, None, None, None, ["a"], group_size=2)


def test_gathered_rollout_sums_counts_and_averages_agent_metrics():
    from seedbench.rollout.types import RolloutStats

    other = (["t2"], RolloutStats(env_time_s=1.0, generation_time_s=4.0, generated_tokens=5, env_steps=3),
             {"seed/analysed": 3.0, "seed/note": None})
    trajs, stats, metrics = _rank(0, 2, [None, other]).gather_rollout(
        ["t0", "t1"], RolloutStats(env_time_s=2.0, generation_time_s=1.0, generated_tokens=1, env_steps=1),
        {"seed/analysed": 1.0, "seed/note": 0.5})
    assert trajs == ["t0", "t1", "t2"]  # rank order = task order
    assert stats == RolloutStats(env_time_s=2.0, generation_time_s=4.0, generated_tokens=6, env_steps=4)
    assert metrics == {"seed/analysed": 2.0, "seed/note": 0.5}  # a None on some rank: this rank's value


def test_resource_totals_sum_ranks_and_add_to_the_previous_session():
    from seedbench.training.resources import ResourceMeter

    meter = ResourceMeter({"cpu_seconds": 10.0, "gpu_seconds": 4.0, "wall_seconds": 5.0, "sessions": 1})
    ranks = [{"cpu_seconds": 3.0, "gpu_seconds": 2.0, "wall_seconds": 2.0},
             {"cpu_seconds": 1.5, "gpu_seconds": 2.5, "wall_seconds": 2.5}]
    assert meter.totals(ranks) == {"cpu_seconds": 14.5, "gpu_seconds": 8.5, "wall_seconds": 7.5, "processes": 2,
                                   "gpus": 2, "sessions": 2}
    meter.gpus = 1
    now = meter.current()
    assert now["gpu_seconds"] == pytest.approx(now["wall_seconds"]) and now["cpu_seconds"] >= 0


def test_report_shows_compute_per_agent(tmp_path):
    from seedbench.report.build import build_document, ReportOptions
    from seedbench.report.data import Run
    from seedbench.report.document import Table

    def run(agent, seed, cpu, gpu):
        return Run(run=f"{agent}{seed}", path=tmp_path, env="choice", agent=agent, model="tiny", seed=seed,
                   complete=True, iterations_done=1, summary={"resources": {"cpu_seconds": cpu, "gpu_seconds": gpu,
                                                                             "wall_seconds": 2.0}})

    doc, _ = build_document([run("grpo", 0, 10.0, 0.0), run("grpo", 1, 20.0, 6.0), run("seed", 0, 7.0, 1.0)],
                            ReportOptions(plots=False, n_resamples=50))
    compute = next(s for s in doc.sections if s.title == "Compute")
    table = next(b for b in compute.blocks if isinstance(b, Table))
    assert table.rows == [["choice", "tiny", "grpo", "2", "15.0", "3.0", "2.0", "30.0", "6.0"],
                          ["choice", "tiny", "seed", "1", "7.0", "1.0", "2.0", "7.0", "1.0"]]
    older = run("grpo", 0, 1.0, 0.0)
    older.summary = {}  # a run from before resource accounting: no Compute section at all
    titles = [s.title for s in build_document([older], ReportOptions(plots=False, n_resamples=50))[0].sections]
    assert "Compute" not in titles and "Protocol cards" in titles


# ----------------------------------------------------------------------------------------------------
# Two ranks against one process. Process start-up (Python, torch, transformers; a torchrun rendezvous)
# is most of these tests' time, so the one-process references run inside the test process and each
# torchrun launch serves several tests through module-scoped fixtures.


def _in_process(fn, *args):
    """Run `fn` here with one intra-op thread (as the ranks have), restoring the thread count after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return fn(*args)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def updates(tmp_path_factory):
    """The fixed-batch updates of tests/distributed_update.py: one process (here), then one torchrun launch
    of two ranks that runs them under ``ddp`` and under ``fsdp``."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        import distributed_update
    finally:
        sys.path.remove(str(REPO / "tests"))
    out = tmp_path_factory.mktemp("updates")
    _in_process(distributed_update.main, out)
    _run(TORCHRUN + [str(REPO / "tests" / "distributed_update.py"), str(out)])
    return out, torch.load(out / "one.pt")


def _max_diff(a: dict, b: dict) -> float:
    return max((a[k] - b[k]).abs().max().item() for k in a)


@pytest.mark.parametrize("strategy,group", [("ddp", "DataParallel"), ("fsdp", "ShardedDataParallel"),
                                            ("ddp_gc", "DataParallel")])
def test_one_update_on_two_ranks_matches_one_process(updates, strategy, group):
    """Seven samples (rank 0: four, rank 1: three), mini-batches of four, micro-batches of two, two PPO
    epochs: four optimizer steps, two of them with members on both ranks and uneven micro-batch counts
    (under fsdp the rank with fewer micro-batches adds zero-loss passes)."""
    out, one = updates
    two = torch.load(out / f"{strategy}.pt")
    assert (one["world"], two["world"], two["strategy"]) == (1, 2, group)
    assert (one["checkpointing"], two["checkpointing"]) == (False, strategy == "ddp_gc")
    moved = _max_diff(one["params"], one["initial"])
    diff = _max_diff(one["params"], two["params"])
    print(f"{strategy}: max |θ_1proc − θ_2ranks| = {diff:.3g} after an update that moved θ by up to {moved:.3g}")
    assert _max_diff(one["initial"], two["initial"]) == 0.0  # both start from the same weights
    assert moved > 1e-3  # the update did something (lr 0.01, four Adam steps)
    # float summation order: ddp 1.1e-5, fsdp 1.5e-5 measured; a DDP-style mean of per-rank token means: 7.6e-2
    assert diff < 1e-4
    m1, m2 = one["metrics"], two["metrics"]
    assert m1["train/samples"] == m2["train/samples"] == 7
    assert m1["train/response_tokens"] == m2["train/response_tokens"]
    for key in ("train/loss", "train/grad_norm", "train/clip_frac"):
        assert m2[key] == pytest.approx(m1[key], rel=1e-4, abs=1e-6), key


@pytest.mark.parametrize("strategy", ["ddp", "fsdp", "ddp_gc"])
def test_checkpoint_of_two_ranks_resumes_and_is_the_one_process_checkpoint(updates, strategy):
    """After update A a checkpoint is saved; update C moves weights and AdamW moments away; loading the
    checkpoint and updating on batch B must give the one-process A-then-B weights (AdamW's moments matter
    for B, so the optimizer state is checked too). Under fsdp the checkpoint and ``final_model/`` are
    gathered from the shards, in the one-process format."""
    from safetensors.torch import load_file

    out, one = updates
    two = torch.load(out / f"{strategy}.pt")
    diff = _max_diff(one["resumed"], two["resumed"])
    print(f"{strategy}: after checkpoint, update C, resume, update B: max |θ_1proc − θ_2ranks| = {diff:.3g}")
    assert _max_diff(one["resumed"], one["params"]) > 1e-3 and diff < 1e-4
    checkpoint = [out / f"run_{name}" / "checkpoints" / "it_0" for name in ("one", strategy)]
    models = [torch.load(c / "model.pt") for c in checkpoint]
    assert models[0].keys() == models[1].keys()
    assert all(type(v) is torch.Tensor for v in models[1].values())  # full tensors, not DTensor shards
    assert _max_diff(models[0], models[1]) < 1e-4
    optimizers = [torch.load(c / "optimizer.pt")["state"] for c in checkpoint]
    assert optimizers[0].keys() == optimizers[1].keys()
    for index, state in optimizers[0].items():
        for key, value in state.items():
            assert type(optimizers[1][index][key]) is torch.Tensor
            assert (value - optimizers[1][index][key]).abs().max().item() < 1e-4, (index, key)
    final = load_file(out / f"{strategy}_final_model" / "model.safetensors")
    assert final and all(torch.equal(tensor, two["resumed"][name]) for name, tensor in final.items())


@pytest.fixture(scope="module")
def one_process_run(tmp_path_factory):
    from seedbench.cli import main

    out = tmp_path_factory.mktemp("one") / "run"
    assert _in_process(main, _run_cli(out, 4)[2:] + ["save_every=1"]) == 0
    return out


def _metric_keys(path: Path) -> list[set[str]]:
    return [set(r) for r in read_jsonl(path / "metrics.jsonl")]


def _rank_pids(launcher: int) -> dict[int, int]:
    """Rank → pid of torchrun's workers, from /proc (children of the launcher with RANK in their env)."""
    ranks = {}
    for task in Path(f"/proc/{launcher}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                env = Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            for item in env:
                if item.startswith(b"RANK="):
                    ranks[int(item[5:])] = int(child)
    return ranks


@pytest.fixture(scope="module")
def killed_and_resumed(tmp_path_factory):
    """A 4-iteration tiny run on two ranks under ``ddp``, rank 1 SIGKILLed during iteration 2; then the same
    command with ``--resume`` under ``fsdp`` (checkpoints are full state dicts, whatever the strategy), so
    one pair of launches covers both strategies end to end. Returns the run, the failed launch's exit code
    and output, and the summary the failure left."""
    out = tmp_path_factory.mktemp("killed") / "run"
    launcher = subprocess.Popen(TORCHRUN + _run_cli(out, 4) + ["save_every=1"], env=_env(), cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (out / "checkpoints" / "it_1" / "COMPLETE").exists():
            assert launcher.poll() is None and time.monotonic() < deadline, "no checkpoint to resume from"
            time.sleep(0.05)
        os.kill(_rank_pids(launcher.pid)[1], signal.SIGKILL)  # rank 1, during iteration 2
        output, _ = launcher.communicate(timeout=120)  # the group fails instead of hanging in a collective
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    failed = json.loads((out / "summary.json").read_text())
    _run(TORCHRUN + _run_cli(out, 4, resume=True) + ["save_every=1", "distributed.strategy=fsdp"])
    return out, launcher.returncode, output, failed


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the ranks through /proc (Linux)")
def test_a_killed_rank_fails_the_run_cleanly_and_resume_completes_it(killed_and_resumed):
    out, returncode, output, failed = killed_and_resumed
    assert returncode != 0, output[-2000:]
    assert not failed["complete"] and failed["iterations_done"] < 4
    # console lines come from rank 0 alone: iteration 1 and the first evaluation ran on both ranks
    assert output.count("seedbench: iteration 1/4 ") == 1 and output.count("seedbench: eval test @ iteration 0:") == 1
    records = list(read_jsonl(out / "metrics.jsonl"))
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]  # nothing counted twice
    assert [r["trajectories"] for r in records] == [8, 16, 24, 32]  # 4 tasks × 2 per iteration, all ranks counted
    train_eps = [e for e in read_jsonl(out / "episodes.jsonl") if e["phase"] == "train"]
    assert len(train_eps) == 32 and len({(e["iteration"], e["episode_id"]) for e in train_eps}) == 32
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["iterations_done"] == 4 and summary["resources"]["sessions"] == 2
    assert summary["resources"]["processes"] == 2 and summary["resources"]["gpu_seconds"] == 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the ranks through /proc (Linux)")
def test_two_rank_run_has_the_one_process_schema_episodes_and_evaluations(killed_and_resumed, one_process_run):
    two, one = killed_and_resumed[0], one_process_run
    per_iteration = [sum(r["time/iteration_s"] for r in read_jsonl(p / "metrics.jsonl")) / 4 for p in (one, two)]
    print(f"mean time/iteration_s: one process {per_iteration[0]:.2f}s, two ranks {per_iteration[1]:.2f}s")
    assert _metric_keys(one) == _metric_keys(two)
    # the same episodes (ids are global task indices), each logged once, by rank 0 only
    episodes = {p: [(e["phase"], e["iteration"], e["episode_id"], e["task"]) for e in read_jsonl(p / "episodes.jsonl")]
                for p in (one, two)}
    assert sorted(episodes[one]) == sorted(episodes[two]) and len(set(episodes[two])) == len(episodes[two])
    evals = {p: [(r["iteration"], r["task_ids"], r["num_tasks"]) for r in read_jsonl(p / "eval.jsonl")] for p in (one, two)}
    assert evals[one] == evals[two] and [e[0] for e in evals[two]] == [0, 4]
    from transformers import AutoModelForCausalLM

    final = AutoModelForCausalLM.from_pretrained(two / "final_model")  # gathered from fsdp shards by rank 0
    assert sum(p.numel() for p in final.parameters()) == sum(
        p.numel() for p in AutoModelForCausalLM.from_pretrained(one / "final_model").parameters())
