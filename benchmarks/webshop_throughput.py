"""WebShop: search speed, env steps per second in-process vs in worker processes, and reference agents.

    python benchmarks/webshop_throughput.py [--envs 32] [--workers 0,1,2] [--goals 500]
                                            [--out benchmarks/results/webshop_throughput.json]

Measures, on the default generated 1,000-product catalogue:

- building the BM25 index (bm25s) and answering queries (the test goals' instructions), ms per query;
- env steps per second, playing `--envs` test goals at once with a seeded "searching random clicker"
  (searches the instruction, then clicks uniformly among the admissible actions) under each setting:
  ``0`` = `LocalEnvs` in this process, ``k ≥ 1`` = `EnvPool` with k worker processes;
- score (mean purchase score × 100) and success (score = 100) on the first `--goals` test goals of
  three agents: the scripted expert (`expert_plan`), the uniform random agent of ``seedbench eval
  --agent random`` (its search is the literal placeholder, so it never finds a product) and the
  searching random clicker.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path


def act(payload: str) -> str:
    return f"<think>benchmark</think><action>{payload}</action>"


def random_clicker(rng: random.Random, info: dict, search_task: bool) -> str:
    actions = info["admissible_actions"]
    choice = rng.choice(actions)
    if search_task and choice.startswith("search["):
        return f"search[{info['task'].split(', and price lower than')[0]}]"
    return choice


def agent_scores(env, goals: int, agent: str, seed: int = 0) -> dict:
    rng, scores = random.Random(seed), []
    for s in range(goals):
        _, info = env.reset(seed=s, options={"split": "test"})
        while True:
            if agent == "expert":
                payload = env.expert_plan()[0]
            else:
                payload = random_clicker(rng, info, search_task=agent == "random_clicker")
            _, _, terminated, truncated, info = env.step(act(payload))
            if terminated or truncated:
                break
        scores.append(info["score"])
    return {"agent": agent, "goals": goals, "score": 100 * sum(scores) / len(scores),
            "success": sum(s == 1.0 for s in scores) / len(scores)}


def play(envs, num_envs: int, seed: int = 0) -> dict:
    """Reset `num_envs` test goals, then step every live env with the searching random clicker until all end."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    infos = [info for _, info in envs.reset_many([(i, i, {"split": "test"}) for i in range(num_envs)])]
    reset_s = time.perf_counter() - t0
    live, steps, t0 = list(range(num_envs)), 0, time.perf_counter()
    while live:
        actions = [(i, act(random_clicker(rng, infos[i], True))) for i in live]
        still = []
        for (i, _), outcome in zip(actions, envs.step_many(actions)):
            steps += 1
            _, _, terminated, truncated, infos[i] = outcome
            if not (terminated or truncated):
                still.append(i)
        live = still
    step_s = time.perf_counter() - t0
    return {"reset_s": reset_s, "steps": steps, "step_s": step_s, "steps_per_s": steps / step_s}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=32)
    parser.add_argument("--workers", default="0,1,2", help="comma list; 0 = in-process")
    parser.add_argument("--goals", type=int, default=500, help="test goals for the agent scores")
    parser.add_argument("--out", default="benchmarks/results/webshop_throughput.json")
    args = parser.parse_args(argv)

    from seedbench.envs.batch import LocalEnvs
    from seedbench.envs.pool import EnvPool
    from seedbench.envs.processes import available_cpus
    from seedbench.envs.webshop.search import SearchIndex
    from seedbench.registry import make_env

    t0 = time.perf_counter()
    env = make_env("webshop")
    load_s = time.perf_counter() - t0
    products = env.shop.catalogue.products
    t0 = time.perf_counter()
    index = SearchIndex(products)
    index_s = time.perf_counter() - t0
    queries = [env.shop.goals[i]["instruction_text"] for i in env.shop.splits["test"]]
    t0 = time.perf_counter()
    for query in queries:
        index.search(query)
    search_ms = 1000 * (time.perf_counter() - t0) / len(queries)
    print(f"catalogue {len(products)} products, {len(env.shop.goals)} goals: load {load_s:.2f} s, "
          f"index {1000 * index_s:.0f} ms, search {search_ms:.2f} ms/query", flush=True)

    rows = []
    for workers in [int(w) for w in args.workers.split(",")]:
        t0 = time.perf_counter()
        envs = LocalEnvs(lambda: make_env("webshop"), args.envs) if workers == 0 else \
            EnvPool(("webshop", {}), num_envs=args.envs, num_workers=workers)
        start_s = time.perf_counter() - t0
        try:
            row = {"workers": workers, "start_s": start_s, **play(envs, args.envs)}
        finally:
            envs.close()
        rows.append(row)
        print(f"workers={workers}: start {start_s:5.1f} s, {row['steps_per_s']:7.0f} steps/s ({row['steps']} steps)",
              flush=True)

    agents = [agent_scores(env, args.goals, name) for name in ("expert", "random", "random_clicker")]
    for a in agents:
        print(f"{a['agent']:>15}: score {a['score']:5.1f}, success {a['success']:.3f} on {a['goals']} test goals")
    record = {"products": len(products), "goals": len(env.shop.goals), "catalogue_checksum": env.provenance()["manifest_checksum"],
              "load_s": load_s, "index_ms": 1000 * index_s, "search_ms_per_query": search_ms, "cpus": available_cpus(),
              "envs": args.envs, "rows": rows, "agents": agents}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
