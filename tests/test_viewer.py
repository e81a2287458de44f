"""``seedbench view``: token signals saved by a tiny SEED run, the viewer's data, and the page itself in
headless Chromium (an episode, its skill, coloured tokens, filters; a 10,000-episode run opens fast)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import time
from pathlib import Path

import pytest

from seedbench.jsonio import append_jsonl, read_jsonl, write_json_atomic
from seedbench.viewer.build import build_viewer
from tests.test_report import chromium

SKILL = "answer right . choose right . right"
needs_chromium = pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install -y chromium)")


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory) -> Path:
    """One iteration of SEED with static skills on the two-armed `choice` env and the tiny model: every
    trajectory gets a skill, so every step has a gate; all four trajectories' signals are saved."""
    import torch

    from seedbench.config import build_config
    from seedbench.training.trainer import train

    tmp = tmp_path_factory.mktemp("seed_run")
    library = tmp / "library.jsonl"
    library.write_text(json.dumps({"task_text": "choose left or right", "episode_skill": SKILL, "won": True,
                                   "episode_summary": "went right", "first_observation": "You stand at a fork in the road.",
                                   "task": "train:0"}) + "\n")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return Path(train(build_config(overrides={
            "env": "choice", "agent": "seed-static-skills", "model": {"name": "tiny"}, "iterations": 1,
            "output": str(tmp / "run"), "rollout": {"max_new_tokens": 4, "tasks_per_batch": 2, "group_size": 2},
            "eval": {"num_tasks": 2}, "save_final_model": False, "token_signal_trajectories": 4,
            "algo": {"skill_library": str(library)}})))
    finally:
        torch.set_num_threads(threads)


def dump_dom(page: Path, fragment: str = "") -> tuple[str, float]:
    """The DOM after the page's scripts ran (and the wall time of the whole browser call)."""
    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--virtual-time-budget=10000",
           "--dump-dom", page.resolve().as_uri() + fragment]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    return done.stdout, time.perf_counter() - start


def status(dom: str) -> dict[str, str]:
    match = re.search(r'<span id="status"([^>]*)>([^<]*)<', dom)
    assert match, "no #status element in the DOM"
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', match.group(1)))
    return {**attrs, "text": match.group(2)}


def load_js(path: Path) -> object:
    """The data of a viewer file: ``SEEDBENCH_INDEX({...});`` or ``SEEDBENCH_CHUNK(n, [...]);``."""
    text = path.read_text()
    body = text[text.index("(") + 1: text.rindex(")")]
    return json.loads(body.split(", ", 1)[1] if text.startswith("SEEDBENCH_CHUNK") else body)


# -- token signals -------------------------------------------------------------------------------------
def test_saved_gates_are_the_gates_of_the_update(seed_run):
    records = list(read_jsonl(seed_run / "token_signals.jsonl"))
    episodes = {e["episode_id"]: e for e in read_jsonl(seed_run / "episodes.jsonl") if e["phase"] == "train"}
    assert sorted(r["episode_id"] for r in records) == sorted(episodes)  # 4 trajectories × 1 step
    gates = []
    for record in records:
        gate, gap = record["signals"]["gate"], record["signals"]["gap"]
        assert len(gate) == len(gap) == len(record["tokens"]) >= 1
        # the trained response ids decoded one by one = the raw output, plus the special tokens it leaves out
        joined, output = "".join(record["tokens"]).replace(" ", ""), episodes[record["episode_id"]]["steps"][0]["output"]
        assert re.sub(r"<unk>|<eos>", "", joined) == output.replace(" ", "")
        for g, d in zip(gate, gap):
            assert g == pytest.approx(1 / (1 + math.exp(-5.0 * d)), abs=2e-5)  # β = 5
        gates += gate
    # one mini-batch, one epoch: the loss saw exactly these gates, so their mean is seed/gate_mean
    (metrics,) = read_jsonl(seed_run / "metrics.jsonl")
    assert sum(gates) / len(gates) == pytest.approx(metrics["seed/gate_mean"], abs=1e-4)


def test_token_signal_trajectories_bounds_what_is_saved(tmp_path):
    """The trainer keeps the signals of the first `token_signal_trajectories` trajectories that have any."""
    from types import SimpleNamespace

    from seedbench.agents.base import TrainSample
    from seedbench.rollout.types import TaskRef, Trajectory
    from seedbench.training.rundir import RunDir
    from seedbench.training.update import PolicyUpdate, UpdateBatch

    class Agent:
        def token_signals(self, samples, old_logp):
            return [None if s.traj_index == 0 else {"gate": [0.5] * len(s.response_ids)} for s in samples]

    trajectories = [Trajectory(f"it1-{t}", t, TaskRef("train", t)) for t in range(4)]
    for t, traj in enumerate(trajectories):
        traj.steps = [SimpleNamespace(step=k, response_ids=[t, k]) for k in range(2)]
    samples = [TrainSample([1], [t, k], 0.0, t) for t in range(4) for k in range(2)]
    fake = SimpleNamespace(config=SimpleNamespace(token_signal_trajectories=2), agent=Agent(), run_dir=RunDir(tmp_path),
                           policy=SimpleNamespace(tokenizer=SimpleNamespace(decode=lambda ids: f"<{ids[0]}>")),
                           counters={"iteration": 0})
    PolicyUpdate.log_token_signals(fake, UpdateBatch(samples, trajectories, 0), [[0.0, 0.0]] * len(samples))
    records = list(read_jsonl(tmp_path / "token_signals.jsonl"))
    assert [(r["episode_id"], r["step"]) for r in records] == [("it1-1", 0), ("it1-1", 1), ("it1-2", 0), ("it1-2", 1)]
    assert records[0]["tokens"] == ["<1>", "<0>"] and records[0]["iteration"] == 1
    fake.config.token_signal_trajectories = 0
    PolicyUpdate.log_token_signals(fake, UpdateBatch(samples, trajectories, 0), [[0.0, 0.0]] * len(samples))
    assert len(list(read_jsonl(tmp_path / "token_signals.jsonl"))) == 4


# -- the viewer's data ------------------------------------------------------------------------------------
def test_viewer_data_joins_skills_and_signals_to_their_episodes(seed_run, tmp_path):
    page = build_viewer(seed_run, tmp_path / "view")
    index = load_js(page.parent / "data" / "index.js")
    assert index["run"]["agent"] == "seed-static-skills" and index["phases"] == ["eval/test", "train"]
    rows = index["episodes"]
    assert len(rows["it"]) == 8 and sum(rows["skill"]) == 4 and sum(rows["signals"]) == 4  # 4 eval + 4 train
    chunks = {c["file"]: c for c in index["chunks"]}
    train_file = next(f for f, c in chunks.items() if c["phase"] == "train")
    episodes = load_js(page.parent / train_file)
    signals = {r["episode_id"]: r for r in read_jsonl(seed_run / "token_signals.jsonl")}
    for episode in episodes:
        assert episode["skill"] == {"ok": True, "summary": "went right", "skill": SKILL, "analyzer": "static"}
        (step,) = episode["steps"]
        assert step["sig"]["signals"] == signals[episode["id"]]["signals"]
        assert step["obs"] == "You stand at a fork in the road."  # the current observation, cut from the prompt


def test_chunks_never_split_a_group(tmp_path):
    run = synthetic_run(tmp_path / "run", iterations=1, groups=7, group_size=3, steps=1)
    build_viewer(run, tmp_path / "view", chunk_episodes=5)
    index = load_js(tmp_path / "view" / "data" / "index.js")
    assert [c["episodes"] for c in index["chunks"]] == [6, 6, 6, 3]  # cut at the first group end ≥ 5
    for chunk, group in zip(index["episodes"]["chunk"], index["episodes"]["group"]):
        assert chunk == group // 2


def test_view_cli_rejects_a_directory_without_episodes(tmp_path, capsys):
    from seedbench.cli import main

    assert main(["view", str(tmp_path)]) == 2
    assert "no episodes.jsonl" in capsys.readouterr().err


# -- in a real browser --------------------------------------------------------------------------------------
@needs_chromium
def test_chromium_shows_an_episode_its_skill_and_coloured_tokens(seed_run, tmp_path):
    page = build_viewer(seed_run, tmp_path / "view")
    dom, _ = dump_dom(page)
    assert status(dom)["data-ready"] == "1"
    cards = re.findall(r'<div class="episode (won|lost)" data-episode="(it1-[^"]+)"', dom)
    assert len(cards) == 4  # the train phase is shown first: 2 groups of 2, side by side
    assert dom.count(SKILL) == 4 and "went right" in dom
    spans = re.findall(r'<span class="tok" data-value="([^"]+)" title="gate ([^ ]+) · gap ([^"]+)" '
                       r'style="background:rgb\((\d+),(\d+),(\d+)\)', dom)
    tokens = sum(len(r["tokens"]) for r in read_jsonl(seed_run / "token_signals.jsonl"))
    assert len(spans) == tokens
    for _value, gate, _gap, red, green, blue in spans:
        gate, red, green = float(gate), int(red), int(green)
        assert (green > red) == (gate > 0.5) or abs(gate - 0.5) < 1e-3  # green: the skill made it likelier
        assert (red, green, int(blue)) != (255, 255, 255) or abs(gate - 0.5) < 1e-3
    # the other colouring: teacher − student log-prob, via the link fragment
    dom_gap, _ = dump_dom(page, "#colour=gap")
    assert re.search(r'data-value="[^"]+" title="gate [^ ]+ · gap [^"]+"', dom_gap) and "−2 nats" in dom_gap


@needs_chromium
def test_filters_by_outcome_invalid_steps_and_task_type(tmp_path):
    run = synthetic_run(tmp_path / "run", iterations=2, groups=5, group_size=4, steps=2)
    episodes = [e for e in read_jsonl(run / "episodes.jsonl")]
    page = build_viewer(run, tmp_path / "view")
    for fragment, keep in (("#won=1", lambda e: e["won"]), ("#won=0&inv=1", lambda e: not e["won"] and e["num_invalid"]),
                           ("#type=look&it=2", lambda e: e["task_type"] == "look" and e["iteration"] == 2)):
        dom, _ = dump_dom(page, fragment + "&page=1")
        wanted = [e for e in episodes if keep(e)]
        groups = {(e["iteration"], e["group_id"]) for e in wanted}
        assert f"({len(groups)} groups)" in dom, fragment
        shown = re.findall(r'data-episode="([^"]+)"', dom)
        assert shown == [e["episode_id"] for e in wanted][:len(shown)] and shown, fragment
        assert len(shown) == sum(1 for e in wanted if (e["iteration"], e["group_id"]) in sorted(groups)[:8])


@needs_chromium
def test_a_ten_thousand_episode_run_opens_in_a_few_seconds(tmp_path):
    run = synthetic_run(tmp_path / "run", iterations=50, groups=25, group_size=8, steps=3)
    start = time.perf_counter()
    page = build_viewer(run, tmp_path / "view")
    build_s = time.perf_counter() - start
    index = load_js(page.parent / "data" / "index.js")
    assert len(index["episodes"]["it"]) == 10_000
    dom, wall_s = dump_dom(page)
    info = status(dom)
    assert info["data-ready"] == "1" and info["text"].startswith("10000 episodes")
    render_ms = int(info["data-render-ms"])
    print(f"10,000 episodes: build {build_s:.1f} s, index.js {(page.parent / 'data' / 'index.js').stat().st_size / 1e3:.0f} kB, "
          f"first page drawn {render_ms} ms after the page started, chromium call {wall_s:.1f} s")
    assert render_ms < 3000 and wall_s < 60
    assert len(re.findall(r'data-episode="', dom)) == 8 * 8  # one page: 8 groups of 8


# -- a synthetic run directory (episodes only, in the run-directory contract) -------------------------------
def synthetic_run(path: Path, iterations: int, groups: int, group_size: int, steps: int) -> Path:
    """Deterministic episodes: episode k of group g wins when (g + k) % 3 == 0, has an invalid step when
    k % 2 == 1; task types alternate pick / look by group."""
    path.mkdir(parents=True)
    lines = []
    for iteration in range(1, iterations + 1):
        for g in range(groups):
            for k in range(group_size):
                won, invalid = (g + k) % 3 == 0, k % 2 == 1
                lines.append(json.dumps({
                    "iteration": iteration, "phase": "train", "episode_id": f"it{iteration}-{g}-{k}", "group_id": g,
                    "task": f"train:{g}", "task_id": f"t{g}", "task_type": ("pick", "look")[g % 2],
                    "task_text": f"put the object {g} somewhere", "won": won, "env_return": float(won),
                    "reward": float(won), "dropped": False, "truncated": not won, "num_invalid": int(invalid),
                    "steps": [{"step": s, "prompt": "Your task is to: put it somewhere\nYou are now at step "
                               f"{s + 1} and your current observation is:\nroom {g}, step {s}, " + "x" * 200 + "\nNow it's your turn.",
                               "output": "<think>go</think><action>go</action>", "action": "go",
                               "valid": not (invalid and s == 0), "reward": 0.0} for s in range(steps)]}))
    (path / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    write_json_atomic(path / "summary.json", {"env": "synthetic", "agent": "grpo", "iterations": iterations})
    append_jsonl(path / "metrics.jsonl", {"iteration": 1, "rollout/success": 0.5})
    return path


def test_serve_serves_the_viewer_on_localhost(tmp_path, free_port):
    import os
    import sys
    import urllib.request

    run = synthetic_run(tmp_path / "run", iterations=1, groups=1, group_size=2, steps=1)
    port = free_port
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    server = subprocess.Popen([sys.executable, "-m", "seedbench.cli", "view", str(run), "--serve", "--port", str(port)],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert "serving http://127.0.0.1:" in server.stdout.readline() + server.stdout.readline()
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=10).read().decode()
        data = urllib.request.urlopen(f"http://127.0.0.1:{port}/data/chunk_0.js", timeout=10).read().decode()
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "<title>seedbench viewer</title>" in page and '"id":"it1-0-1"' in data
