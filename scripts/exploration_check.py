"""How much a checkpoint explores on an env's training tasks: success, the share of groups whose episodes
had mixed outcomes (the groups that give GRPO a non-zero advantage), distinct action sequences per group
and the mean -log p of a sampled token. Used to choose the CPU study's stage-1 recipe from training tasks
only (docs/results/cpu-study/README.md):

    python scripts/exploration_check.py CHECKPOINT_DIR --env frozenlake-neighbours --tasks 16 --group-size 4

Tasks come from the env's training split, drawn with their own seed (apart from stage 1's draw).
"""

from __future__ import annotations

import argparse
import json
import types

import numpy as np

from seedbench.config.schema import ModelConfig
from seedbench.engines.base import SamplingParams
from seedbench.engines.factory import close_engine, make_engine
from seedbench.envs.batch import LocalEnvs
from seedbench.models.policy import load_policy
from seedbench.registry import make_env
from seedbench.rollout.lockstep import run_episodes
from seedbench.rollout.types import TaskRef
from seedbench.seeding import seed_everything


def exploration(trajectories) -> dict[str, float | str]:
    """The check's figures over finished `trajectories`, grouped by task."""
    groups: dict[str, list] = {}
    for trajectory in trajectories:
        groups.setdefault(trajectory.task.key(), []).append(trajectory)
    mixed = sum(1 for group in groups.values() if 0 < sum(t.won for t in group) < len(group))
    logps = [x for t in trajectories for s in t.steps for x in s.sampled_logprobs]
    return {"success": float(np.mean([t.won for t in trajectories])),
            "mixed_groups": f"{mixed}/{len(groups)}",
            "distinct_action_sequences_per_group": float(np.mean(
                [len({tuple(s.action for s in t.steps) for t in group}) for group in groups.values()])),
            "nll_per_sampled_token": -float(np.mean(logps)) if logps else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="HF checkpoint directory or model name (smollm2-135m, tiny)")
    parser.add_argument("--env", default="frozenlake-neighbours")
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--history-length", type=int, default=0)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()

    seed_everything(args.seed)
    policy = load_policy(ModelConfig(name=args.checkpoint, dtype="auto"), need_reference=False, seed=args.seed)
    engine = make_engine("hf", policy, types.SimpleNamespace())
    env = make_env(args.env)
    rng = np.random.default_rng([args.seed, 777])
    tasks = [TaskRef(env.splits[0], int(s)) for s in rng.integers(0, 2**31 - 1, size=args.tasks)]
    chunk = min(8, args.tasks)
    envs = LocalEnvs(lambda: make_env(args.env), chunk * args.group_size)
    trajectories = []
    try:
        for start in range(0, args.tasks, chunk):
            batch, _ = run_episodes(envs, env, engine, policy.tokenizer, tasks[start:start + chunk],
                                    group_size=args.group_size, history_length=args.history_length,
                                    params=SamplingParams(max_new_tokens=args.max_new_tokens,
                                                          temperature=args.temperature),
                                    max_steps=args.max_steps)
            trajectories += batch
    finally:
        envs.close()
        close_engine(engine)
    print(json.dumps({"checkpoint": args.checkpoint, "env": args.env, "temperature": args.temperature,
                      **exploration(trajectories)}))


if __name__ == "__main__":
    main()
