"""Rollout benchmark: env steps/s and tokens/s of the continuous, done-aware rollout against lock-step.

    python benchmarks/rollout_speed.py [--model smollm2-135m] [--dtype auto|fp32|bf16] [--envs sokoban,alfworld-sized]
                                       [--engines hf,vllm] [--tasks 2 --group 4] [--max-new-tokens 32]
                                       [--out benchmarks/results/rollout_speed.json]

Three schedules play the same tasks with the same engine:

* ``masked``: verl-agent's lock-step: every step generates for *every* env of the batch until
  ``max_steps`` and masks finished episodes afterwards (modelled by padding each `generate` call to the
  full batch with throw-away prompts; only real steps and tokens are counted);
* ``lockstep``: `seedbench.rollout.lockstep.run_episodes`: lock-step over steps, finished episodes left out;
* ``continuous``: `seedbench.rollout.continuous.run_episodes`: each episode advances as soon as its own env
  step returns; with vLLM, requests join the running batch (continuous batching); env steps run in
  a thread pool.

Envs: ``sokoban`` is the real env (6x6, one box; an untrained policy rarely wins, so most episodes hit
the step cap); ``alfworld-sized`` is a stand-in with ALFWorld's shape: long observations, 10–25
admissible actions, episode lengths spread uniformly over 3..max_steps (fixed per task seed, so every
schedule sees the same lengths) and a per-step latency (``--env-latency-ms``, default 20 ms, a
TextWorld step's order of magnitude) spent outside the GIL, as an env in a worker process would.
Ratios are from this one run: the schedules run interleaved, ``--repeats`` times each, and rates are
totals over the repeats. The first line printed is the dtype the engines generate in (``--dtype``), as
`benchmarks/update_speed.py` prints it; the JSON keeps the same.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import DTYPES, policy_precision, print_precision  # noqa: E402

ROOMS = ["kitchen", "bedroom", "bathroom", "living room", "hallway"]
OBJECTS = ["apple", "mug", "knife", "book", "plate", "towel", "lamp", "pen", "bowl", "cd", "vase", "key"]
PLACES = ["countertop 1", "countertop 2", "cabinet 1", "cabinet 2", "drawer 1", "drawer 2", "shelf 1", "fridge 1",
          "sinkbasin 1", "stoveburner 1", "desk 1", "bed 1", "sidetable 1", "garbagecan 1", "microwave 1"]


class AlfworldSizedEnv:
    """ALFWorld-shaped stand-in for timing (see the module docstring). Any action is accepted."""

    instruction = ""
    history_length = 2
    max_steps = 30
    splits = ("train",)

    def __init__(self, max_steps: int = 30, latency_s: float = 0.02, index: int = 0):
        self.max_steps, self.latency_s, self.index = max_steps, latency_s, index
        self.rng = np.random.default_rng(0)
        self.length, self.t = 1, 0

    @staticmethod
    def parse_action(text: str) -> tuple[str, bool]:
        start, end = text.rfind("<action>"), text.rfind("</action>")
        return (text[start + 8 : end].strip(), True) if 0 <= start < end else ("", False)

    def _observation(self) -> str:
        picks = self.rng.choice(PLACES, size=6, replace=False)
        things = self.rng.choice(OBJECTS, size=6)
        parts = [f"On the {p}, you see a {o} {int(self.rng.integers(1, 4))}." for p, o in zip(picks, things)]
        return f"You are in the middle of a {self.rng.choice(ROOMS)}. " + " ".join(parts)

    def _info(self) -> dict:
        count = int(self.rng.integers(10, 26))
        actions = ["look", "inventory"] + [f"go to {p}" for p in self.rng.choice(PLACES, size=count - 2)]
        return {"task": f"put a clean {self.rng.choice(OBJECTS)} in {self.rng.choice(PLACES)}",
                "admissible_actions": actions, "won": False, "action_valid": True}

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng([seed, self.index])
        # Group members share the task but not the length (as when some solve it sooner).
        self.length, self.t = int(self.rng.integers(3, self.max_steps + 1)), 0
        time.sleep(self.latency_s)
        return self._observation(), {**self._info(), "task_id": f"alfsized-{seed}"}

    def step(self, text):
        time.sleep(self.latency_s)
        self.t += 1
        done = self.t >= self.length
        info = self._info()
        info["won"] = done
        return self._observation(), 10.0 if done else 0.0, done, False, info

    def close(self):
        pass


class MaskedBatchEngine:
    """verl-agent's schedule on top of any engine: every call generates for the whole batch (finished
    episodes get a throw-away copy of a live prompt) and returns only the live rows."""

    def __init__(self, engine, batch: int):
        self.engine, self.batch, self.name = engine, batch, f"masked-{engine.name}"
        self.padded_tokens = 0

    def generate(self, prompts, params):
        padded = list(prompts) + [prompts[0]] * (self.batch - len(prompts))
        generations = self.engine.generate(padded, params)
        self.padded_tokens += sum(len(g.token_ids) for g in generations[len(prompts):])
        return generations[: len(prompts)]

    def sync_weights(self):
        self.engine.sync_weights()


def make_envs(name: str, count: int, max_steps: int, latency_s: float):
    from seedbench.registry import make_env
    from seedbench.envs.batch import LocalEnvs

    if name == "sokoban":
        return LocalEnvs(lambda: make_env("sokoban", max_steps=max_steps), count)
    indices = iter(range(count))
    return LocalEnvs(lambda: AlfworldSizedEnv(max_steps=max_steps, latency_s=latency_s, index=next(indices)), count)


def play(schedule: str, env_name: str, engine, policy, args) -> dict:
    import torch

    from seedbench.rollout import continuous as async_rollout, lockstep as rollout
    from seedbench.engines.base import SamplingParams
    from seedbench.rollout.types import TaskRef

    count = args.tasks * args.group
    max_steps = args.sokoban_steps if env_name == "sokoban" else args.alfworld_steps
    envs = make_envs(env_name, count, max_steps, args.env_latency_ms / 1000)
    spec = envs.envs[0]
    tasks = [TaskRef(spec.splits[0], 1000 + i) for i in range(args.tasks)]
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=1.0)
    kwargs = dict(group_size=args.group, params=params, history_length=2, max_steps=max_steps)
    torch.manual_seed(0)
    t0 = time.perf_counter()
    if schedule == "continuous":
        trajectories, stats = async_rollout.run_episodes(envs, spec, engine, policy.tokenizer, tasks, **kwargs)
    else:
        eng = MaskedBatchEngine(engine, count) if schedule == "masked" else engine
        trajectories, stats = rollout.run_episodes(envs, spec, eng, policy.tokenizer, tasks, **kwargs)
    wall = time.perf_counter() - t0
    envs.close()
    wasted = eng.padded_tokens if schedule == "masked" else 0
    lengths = [len(t.steps) for t in trajectories]
    return {"wall_s": wall, "env_steps": stats.env_steps, "tokens": stats.generated_tokens,
            "env_steps_per_s": stats.env_steps / wall, "tokens_per_s": stats.generated_tokens / wall,
            "generation_s": stats.generation_time_s, "env_wait_s": stats.env_time_s,
            "wasted_tokens": wasted, "episode_length_mean": float(np.mean(lengths)), "episode_length_min": min(lengths),
            "episode_length_max": max(lengths)}


def combine(runs: list[dict]) -> dict:
    """Totals over repeated runs of one schedule, rates from the totals."""
    keys = ("wall_s", "env_steps", "tokens", "wasted_tokens", "generation_s", "env_wait_s")
    total = {key: sum(r[key] for r in runs) for key in keys}
    return {**total, "repeats": len(runs), "env_steps_per_s": total["env_steps"] / total["wall_s"],
            "tokens_per_s": total["tokens"] / total["wall_s"],
            "wall_s_each": [r["wall_s"] for r in runs],
            "episode_length_mean": float(np.mean([r["episode_length_mean"] for r in runs])),
            "episode_length_min": min(r["episode_length_min"] for r in runs),
            "episode_length_max": max(r["episode_length_max"] for r in runs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--dtype", default="auto", choices=DTYPES,
                        help="compute dtype of the engines (auto = bf16 on GPUs and on CPUs with AVX-512-BF16/AMX, "
                             "else fp32); printed")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--envs", default="sokoban,alfworld-sized")
    parser.add_argument("--engines", default="hf,vllm")
    parser.add_argument("--schedules", default="masked,lockstep,continuous")
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--sokoban-steps", type=int, default=8)
    parser.add_argument("--alfworld-steps", type=int, default=16)
    parser.add_argument("--env-latency-ms", type=float, default=20.0)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/rollout_speed.json")
    args = parser.parse_args(argv)

    import torch

    from seedbench.config import ModelConfig
    from seedbench.engines.factory import make_engine, vllm_importable
    from seedbench.models.policy import load_policy

    policy = load_policy(ModelConfig(name=args.model, dtype=args.dtype, device=args.device), need_reference=False)
    ran = print_precision(policy_precision(policy, training=False))  # generation only
    engine_names = [n for n in args.engines.split(",") if n]
    if "vllm" in engine_names and not vllm_importable():
        print("rollout_speed: vLLM is not importable here; measuring hf only (see docs/engines.md)", file=sys.stderr)
        engine_names.remove("vllm")
    config = argparse.Namespace(seed=0, rollout=argparse.Namespace(generation_batch_size=args.tasks * args.group))
    record: dict = {
        "benchmark": "rollout_speed", "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "args": vars(args), "model": args.model, **ran,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None},
        "results": {}, "ratios": {},
    }
    schedules = [s for s in args.schedules.split(",") if s]
    for engine_name in engine_names:
        engine = make_engine(engine_name, policy, config)
        from seedbench.engines.base import SamplingParams

        engine.generate([policy.tokenizer("warm up")["input_ids"]] * 2, SamplingParams(max_new_tokens=4))
        for env_name in [e for e in args.envs.split(",") if e]:
            # Interleaved repeats (masked, lockstep, continuous, masked, ...): load from other processes
            # then hits every schedule alike; the figures are totals over the repeats.
            # One untimed round first: the first batches of a new shape pay one-off costs (vLLM's
            # scheduler and KV-cache blocks, oneDNN's prepacked GEMMs) that would land on whichever
            # schedule happened to run first.
            play(schedules[0], env_name, engine, policy, args)
            runs: dict[str, list[dict]] = {schedule: [] for schedule in schedules}
            for _ in range(args.repeats):
                for schedule in schedules:
                    runs[schedule].append(play(schedule, env_name, engine, policy, args))
            for schedule in schedules:
                result = combine(runs[schedule])
                record["results"][f"{env_name}/{engine_name}/{schedule}"] = result
                print(f"{env_name:>15} {engine_name:>4} {schedule:>10}: {result['env_steps_per_s']:6.2f} steps/s "
                      f"{result['tokens_per_s']:7.1f} tokens/s  wall {result['wall_s']:6.1f} s  "
                      f"(gen {result['generation_s']:.1f} s, env wait {result['env_wait_s']:.1f} s, "
                      f"length {result['episode_length_mean']:.1f}, thrown-away tokens {result['wasted_tokens']})", flush=True)
            results = record["results"]
            for base in ("masked", "lockstep"):
                key, ref = f"{env_name}/{engine_name}/continuous", f"{env_name}/{engine_name}/{base}"
                if key in results and ref in results:
                    ratio = {m: results[key][m] / results[ref][m] for m in ("env_steps_per_s", "tokens_per_s")}
                    record["ratios"][f"{env_name}/{engine_name}/continuous_over_{base}"] = ratio
                    print(f"{'':>15} {engine_name:>4} continuous/{base}: steps/s {ratio['env_steps_per_s']:.2f}x, "
                          f"tokens/s {ratio['tokens_per_s']:.2f}x", flush=True)
        if hasattr(engine, "close"):
            engine.close()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"rollout_speed: wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
