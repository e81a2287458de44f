"""Grid worlds and cards: reset, step and frame times, frame size, and expert vs random success.

    python benchmarks/grid_and_cards_speed.py [--envs frozenlake ezpoints ...] [--tasks 50] [--steps 200]
                                              [--out benchmarks/results/grid_and_cards_speed.json]

For each env (default: every FrozenLake, cards, MiniGrid and BabyAI catalogue line whose dependencies
are installed) on its eval split: the mean time of a `reset` and of a `step` (both include drawing the
frame that goes into ``info["image"]``, as in training), of drawing one frame alone (`render_image`),
the frame's shape and PNG size; then the success of the scripted expert (`expert_plan`, replanned every
step) and of a uniform random agent over the admissible actions (seeded) on the same `--tasks` tasks.
Image-token counts under Qwen2.5-VL's processor are `benchmarks/vision_envs.py`'s job.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ENVS = ["frozenlake", "frozenlake-8x8", "ezpoints", "points24", "minigrid-empty", "minigrid-empty-8x8",
                "minigrid-doorkey", "minigrid-doorkey-6x6", "babyai-gotoredball", "babyai-gotoobj"]


def _wrap(command: str) -> str:
    return f"<think>benchmark</think><action>{command}</action>"


def success(env, split: str, tasks: int, policy) -> tuple[float, float]:
    """(success rate, mean steps) of `policy(info, rng) -> command` over seeds 0..tasks-1 of `split`."""
    rng = np.random.default_rng(0)
    wins, steps = 0, 0
    for seed in range(tasks):
        _, info = env.reset(seed=seed, options={"split": split})
        for _ in range(env.max_steps):
            _, _, terminated, truncated, info = env.step(_wrap(policy(env, info, rng)))
            steps += 1
            if terminated or truncated:
                break
        wins += bool(info["won"])
    return wins / tasks, steps / tasks


def expert(env, info, rng) -> str:
    plan = env.expert_plan()
    return plan[0] if plan else "none"


def uniform(env, info, rng) -> str:
    actions = info["admissible_actions"]
    return actions[int(rng.integers(len(actions)))]


def timings(env, split: str, tasks: int, steps: int) -> dict:
    """Mean reset, step and frame times (ms) with random actions, re-resetting finished episodes."""
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for seed in range(tasks):
        _, info = env.reset(seed=seed, options={"split": split})
    reset_ms = (time.perf_counter() - t0) * 1000 / tasks
    step_s, frame_s, seed = 0.0, 0.0, 0
    for _ in range(steps):
        command = uniform(env, info, rng)
        t0 = time.perf_counter()
        _, _, terminated, truncated, info = env.step(_wrap(command))
        step_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        frame = env.render_image()
        frame_s += time.perf_counter() - t0
        if terminated or truncated:
            seed += 1
            _, info = env.reset(seed=seed, options={"split": split})
    from PIL import Image

    png = io.BytesIO()
    Image.fromarray(frame).save(png, format="PNG")
    return {"reset_ms": reset_ms, "step_ms": step_s * 1000 / steps, "frame_ms": frame_s * 1000 / steps,
            "frame_shape": list(frame.shape), "frame_png_bytes": png.getbuffer().nbytes}


def measure(name: str, tasks: int, steps: int) -> dict:
    from seedbench.registry import make_env

    env = make_env(name)
    split = env.eval_split
    record = {"env": name, "split": split, "max_steps": env.max_steps, **timings(env, split, tasks, steps)}
    record["expert_success"], record["expert_steps"] = success(env, split, tasks, expert)
    record["random_success"], record["random_steps"] = success(env, split, tasks, uniform)
    if "test_large" in env.splits:
        record["expert_success_test_large"] = success(env, "test_large", max(1, tasks // 5), expert)[0]
    env.close()
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=None, help="catalogue aliases (default: all installed)")
    parser.add_argument("--tasks", type=int, default=50, help="eval tasks for the success rates and resets")
    parser.add_argument("--steps", type=int, default=200, help="random steps timed per env")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "grid_and_cards_speed.json"))
    args = parser.parse_args(argv)
    names = args.envs or [n for n in DEFAULT_ENVS
                          if not n.startswith(("minigrid", "babyai")) or importlib.util.find_spec("minigrid")]
    records = [measure(name, args.tasks, args.steps) for name in names]
    header = (f"{'env':22} {'reset ms':>8} {'step ms':>8} {'frame ms':>8} {'frame':>11} {'png kB':>7} "
              f"{'expert':>7} {'random':>7}")
    print(header)
    for r in records:
        shape = "x".join(map(str, r["frame_shape"][:2]))
        print(f"{r['env']:22} {r['reset_ms']:8.2f} {r['step_ms']:8.2f} {r['frame_ms']:8.2f} {shape:>11} "
              f"{r['frame_png_bytes'] / 1000:7.1f} {r['expert_success']:7.2f} {r['random_success']:7.2f}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"tasks": args.tasks, "steps": args.steps, "python": sys.version.split()[0],
                               "results": records}, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
