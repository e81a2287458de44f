"""``seedbench probe-skills``: does a skill carry information the policy can use, before any training?

SEED's distillation signal is the shift a skill causes in the policy's log-probs of its own sampled tokens
(`seedbench.agents.seed.agent`). This probe measures that shift directly, on finished episodes and one
checkpoint, without an update: each episode's step responses are re-scored under the step prompt

* with the episode's **own** skill (what SEED's teacher sees),
* with a **shuffled** skill: the skill of another episode of the same run (the skills permuted among the
  episodes, of a different task where the permutation allows), a control for "any skill-shaped text in the
  prompt",
* with **no** skill (SEED's student prompt),

and reports, for the own and the shuffled skill against no skill, the teacher − student log-prob gap per
token, the share of tokens where SEED's gate is open (> 0.5, computed by the loss's own `gated_opd_loss`),
and the change in probability of the **decisive action**: the action of the episode's last step, the move
that won a won episode and the fatal move of a lost one (episodes cut by the step cap have none). Every
figure is a mean over episodes with its percentile-bootstrap interval over episodes
(`seedbench.stats.bootstrap_ci`). A skill that informs the policy moves the decisive action's
probability with an interval above 0; a shuffled skill should not.

Episodes come from a run directory: ``episodes.jsonl`` (train phase, every step's prompt and output) joined
with ``skills.jsonl`` by (iteration, episode id). Responses are re-tokenised from their recorded text, so a
response whose text does not round-trip through the tokenizer is scored as re-tokenised, not as sampled.
The decisive action's tokens are those inside the first ``<action>…</action>`` tag of the last response
(the reference projection's rule), the whole response when there is none.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import yaml

from seedbench.agents.seed.agent import gated_opd_loss
from seedbench.config.schema import ModelConfig
from seedbench.jsonio import read_jsonl
from seedbench.models.policy import load_policy
from seedbench.models.scoring import score_responses
from seedbench.progress import progress_bar
from seedbench.stats import bootstrap_ci
from seedbench.rollout.prompting import insert_skill, render_prompt

CONDITIONS = ("own", "shuffled")
"""The skill conditions compared against the skill-free prompt."""


class ProbeError(ValueError):
    """Unusable input for the probe; shown as one line."""


@dataclass
class ProbeEpisode:
    """One finished episode with the skill written about it."""

    episode_id: str
    iteration: int
    task: str
    won: bool
    truncated: bool
    prompts: list[str]  # each step's user message, as the policy saw it
    outputs: list[str]  # each step's response text
    skill: str


@dataclass
class ProbeResult:
    episodes: int
    decisive_episodes: int
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    no_skill: dict[str, Any] = field(default_factory=dict)
    own_minus_shuffled: dict[str, Any] = field(default_factory=dict)
    per_episode: list[dict[str, Any]] = field(default_factory=list)  # each episode's values, for breakdowns by task


def load_episodes(run_dir: str | Path, iterations: Sequence[int] | None = None,
                  max_episodes: int | None = None) -> list[ProbeEpisode]:
    """The run's training episodes that have a parsed, non-empty skill and at least one step, in file order."""
    run_dir = Path(run_dir)
    episodes_path, skills_path = run_dir / "episodes.jsonl", run_dir / "skills.jsonl"
    if not skills_path.is_file():
        raise ProbeError(f"{run_dir}: no skills.jsonl; give the directory of a SEED run (its self-analyses)")
    if not episodes_path.is_file():
        raise ProbeError(f"{run_dir}: no episodes.jsonl (an archived run keeps no step texts); give the run "
                         "directory itself, e.g. of `seedbench run --agent seed --iterations 1`")
    skills = {}
    for record in read_jsonl(skills_path):
        if record.get("ok") and (record.get("episode_skill") or "").strip():
            skills[(int(record["iteration"]), str(record["episode_id"]))] = record["episode_skill"]
    wanted = set(iterations) if iterations else None
    out = []
    for record in read_jsonl(episodes_path):
        if record.get("phase") != "train" or not record.get("steps"):
            continue
        key = (int(record["iteration"]), str(record["episode_id"]))
        if key not in skills or (wanted is not None and key[0] not in wanted):
            continue
        steps = record["steps"]
        out.append(ProbeEpisode(key[1], key[0], str(record.get("task")), bool(record.get("won")),
                                bool(record.get("truncated")), [s["prompt"] for s in steps],
                                [s["output"] or "" for s in steps], skills[key]))
        if max_episodes and len(out) >= max_episodes:
            break
    if not out:
        raise ProbeError(f"{run_dir}: no training episode with a parsed skill"
                         + (f" in iteration(s) {sorted(wanted)}" if wanted else ""))
    return out


def shuffled_skills(episodes: Sequence[ProbeEpisode], seed: int = 0, tries: int = 1000) -> list[str]:
    """For each episode, the skill of another episode: a random derangement of the skills (each skill is
    given to exactly one other episode, so the shuffled set says what the own set says, only about other
    episodes), preferring one where no episode gets a skill of its own task. Fewer than two episodes:
    ProbeError."""
    n = len(episodes)
    if n < 2:
        raise ProbeError("the shuffled control needs at least two episodes")
    rng = random.Random(seed)
    order, fallback = list(range(n)), None
    for _ in range(tries):
        rng.shuffle(order)
        if any(order[i] == i for i in range(n)):
            continue
        if all(episodes[order[i]].task != episodes[i].task for i in range(n)):
            return [episodes[j].skill for j in order]
        fallback = fallback or list(order)
    if fallback is None:  # a derangement by rotation always exists
        fallback = [(i + 1) % n for i in range(n)]
    return [episodes[j].skill for j in fallback]


def action_token_span(tokenizer, text: str, ids: list[int]) -> list[int]:
    """Indices of the tokens of `ids` (the tokenisation of `text`) that overlap the payload of the first
    ``<action>…</action>`` tag; all indices when there is no tag or the tokenizer gives no offsets."""
    lowered = text.lower()
    start = lowered.find("<action>")
    end = lowered.find("</action>", start + 8) if start >= 0 else -1
    everything = list(range(len(ids)))
    if start < 0 or end < 0 or end == start + 8:
        return everything
    start += len("<action>")
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except (NotImplementedError, TypeError, ValueError):  # slow tokenizers have no offsets
        return everything
    if list(encoded["input_ids"]) != list(ids):
        return everything
    inside = [k for k, (a, b) in enumerate(encoded["offset_mapping"]) if a < end and b > start and b > a]
    return inside or everything


def _interval(values: Sequence[float], resamples: int, seed: int) -> dict[str, Any]:
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return {"mean": None, "low": None, "high": None, "n": 0}
    ci = bootstrap_ci(np.asarray(values, dtype=float), "mean", n_resamples=resamples, seed=seed)
    return {"mean": ci.point, "low": None if math.isnan(ci.low) else ci.low,
            "high": None if math.isnan(ci.high) else ci.high, "n": ci.n}


def probe(model, tokenizer, episodes: Sequence[ProbeEpisode], *, device="cpu", temperature: float = 1.0,
          skill_block: str = "reference", gate_beta: float = 5.0, shuffle_seed: int = 0,
          micro_batch_size: int = 8, resamples: int = 2000, seed: int = 0) -> ProbeResult:
    """Score every step of `episodes` under the three prompts and summarise (module docstring)."""
    skills = {"own": [e.skill for e in episodes], "shuffled": shuffled_skills(episodes, shuffle_seed)}
    responses = [[tokenizer(o, add_special_tokens=False)["input_ids"] for o in e.outputs] for e in episodes]
    flat_responses = [r for rs in responses for r in rs]

    bar = progress_bar(total=(1 + len(CONDITIONS)) * len(flat_responses), desc="probe: scoring", unit="step")

    def score(contents: list[str]) -> list[list[float]]:
        prompts = [render_prompt(tokenizer, c) for c in contents]
        out: list[list[float]] = []
        for start in range(0, len(prompts), 4 * micro_batch_size):  # chunks, so the bar moves
            end = start + 4 * micro_batch_size
            out += score_responses(model, prompts[start:end], flat_responses[start:end], tokenizer.pad_token_id,
                                   device, micro_batch_size=micro_batch_size, temperature=temperature)
            bar.update(len(prompts[start:end]))
        return out

    def per_episode(flat: list[list[float]]) -> list[list[list[float]]]:
        out, k = [], 0
        for rs in responses:
            out.append(flat[k:k + len(rs)])
            k += len(rs)
        return out

    student = per_episode(score([p for e in episodes for p in e.prompts]))
    decisive = [None if e.truncated else action_token_span(tokenizer, e.outputs[-1], responses[i][-1])
                for i, e in enumerate(episodes)]

    def action_logp(logps: list[list[float]], i: int) -> float | None:
        span = decisive[i]
        return None if span is None or not span else float(sum(logps[-1][k] for k in span))

    base_lp = [action_logp(student[i], i) for i in range(len(episodes))]
    result = ProbeResult(episodes=len(episodes), decisive_episodes=sum(lp is not None for lp in base_lp))
    result.no_skill = {"decisive_prob": _interval([math.exp(lp) for lp in base_lp if lp is not None], resamples, seed)}
    shifts: dict[str, list[float | None]] = {}
    episode_gaps: dict[str, list[float | None]] = {}
    for condition in CONDITIONS:
        teacher = per_episode(score([insert_skill(p, skills[condition][i], skill_block)
                                     for i, e in enumerate(episodes) for p in e.prompts]))
        gaps, opens, gate_means, tokens, open_tokens, gap_sum = [], [], [], 0, 0.0, 0.0
        dprob, dlogp = [], []
        episode_gaps[condition] = [None] * len(episodes)
        for i in range(len(episodes)):
            s = torch.tensor([x for step in student[i] for x in step], dtype=torch.float64)
            t = torch.tensor([x for step in teacher[i] for x in step], dtype=torch.float64)
            if s.numel():
                _, gate, gap = gated_opd_loss(s, t, torch.ones_like(s), gate_beta)
                gaps.append(float(gap.mean()))
                episode_gaps[condition][i] = gaps[-1]
                opens.append(float((gate > 0.5).double().mean()))
                gate_means.append(float(gate.mean()))
                tokens += s.numel()
                open_tokens += float((gate > 0.5).double().sum())
                gap_sum += float(gap.sum())
            lp = action_logp(teacher[i], i)
            if lp is None or base_lp[i] is None:
                dprob.append(None)
                dlogp.append(None)
            else:
                dprob.append(math.exp(lp) - math.exp(base_lp[i]))
                dlogp.append(lp - base_lp[i])
        shifts[condition] = dprob
        result.conditions[condition] = {
            "gap_per_token": _interval(gaps, resamples, seed), "gate_open_share": _interval(opens, resamples, seed),
            "gate_mean": _interval(gate_means, resamples, seed),
            "decisive_prob_shift": _interval(dprob, resamples, seed),
            "decisive_logp_shift": _interval(dlogp, resamples, seed),
            "pooled": {"tokens": tokens, "gap_per_token": gap_sum / tokens if tokens else None,
                       "gate_open_share": open_tokens / tokens if tokens else None},
        }
    bar.close()
    paired = [a - b for a, b in zip(shifts["own"], shifts["shuffled"]) if a is not None and b is not None]
    result.own_minus_shuffled = {"decisive_prob_shift": _interval(paired, resamples, seed)}
    result.per_episode = [
        {"episode_id": e.episode_id, "iteration": e.iteration, "task": e.task, "won": e.won, "truncated": e.truncated,
         "decisive_prob": None if base_lp[i] is None else math.exp(base_lp[i]),
         **{f"gap_{c}": episode_gaps[c][i] for c in CONDITIONS},
         **{f"decisive_prob_shift_{c}": shifts[c][i] for c in CONDITIONS}}
        for i, e in enumerate(episodes)]
    return result


def _fmt(entry: dict[str, Any], digits: int = 3) -> str:
    if entry.get("mean") is None:
        return "–"
    text = f"{entry['mean']:+.{digits}f}"
    if entry.get("low") is not None:
        text += f" [{entry['low']:+.{digits}f}, {entry['high']:+.{digits}f}]"
    return text


def format_table(result: ProbeResult) -> str:
    """The result as a Markdown table: one row per skill condition, means over episodes [95 % bootstrap]."""
    lines = [f"{result.episodes} episodes ({result.decisive_episodes} with a decisive action); means over "
             "episodes [95 % bootstrap interval over episodes]", "",
             "| skill | teacher − student gap (nats/token) | gate open share | gate mean | "
             "Δ P(decisive action) | Δ log P(decisive action) |", "|---|---:|---:|---:|---:|---:|"]
    for condition in CONDITIONS:
        c = result.conditions[condition]
        lines.append(f"| {condition} | {_fmt(c['gap_per_token'])} | {_fmt(c['gate_open_share'])} | "
                     f"{_fmt(c['gate_mean'])} | {_fmt(c['decisive_prob_shift'])} | {_fmt(c['decisive_logp_shift'])} |")
    p = result.no_skill["decisive_prob"]
    lines.append(f"| none | 0 | – | – | P = {_fmt(p)[1:] if p.get('mean') is not None else '–'} | – |")
    lines += ["", f"own − shuffled, Δ P(decisive action), paired by episode: "
                  f"{_fmt(result.own_minus_shuffled['decisive_prob_shift'])}"]
    return "\n".join(lines)


def _run_settings(run_dir: Path) -> dict[str, Any]:
    """The run's rollout temperature, skill-block wording and gate β from its config.yaml, where recorded."""
    path = run_dir / "config.yaml"
    config = (yaml.safe_load(path.read_text()) or {}) if path.is_file() else {}
    algo, rollout = config.get("algo") or {}, config.get("rollout") or {}
    return {"temperature": float(rollout.get("temperature", 1.0)),
            "skill_block": str(algo.get("skill_block", "reference")), "gate_beta": float(algo.get("gate_beta", 5.0))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="seedbench probe-skills", description=(
        "Re-score a SEED run's finished episodes under their own skill, a shuffled skill and no skill with "
        "one checkpoint: teacher - student gap, gate open share and the decisive action's probability shift, "
        "each with a bootstrap interval over episodes."))
    parser.add_argument("run", help="a SEED run directory (episodes.jsonl and skills.jsonl)")
    parser.add_argument("--model", required=True, help="checkpoint to score with (path, hub id, smollm2-135m, tiny)")
    parser.add_argument("--iterations", type=int, nargs="*", help="only the episodes of these iterations")
    parser.add_argument("--max-episodes", type=int, default=None, help="at most this many episodes (file order)")
    parser.add_argument("--temperature", type=float, default=None, help="scoring temperature (default: the run's)")
    parser.add_argument("--shuffle-seed", type=int, default=0, help="seed of the shuffled-skill draw")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None, help="write the JSON result and the table (.md) under this folder")
    args = parser.parse_args(argv)
    try:
        run_dir = Path(args.run)
        episodes = load_episodes(run_dir, args.iterations, args.max_episodes)
        settings = _run_settings(run_dir)
        if args.temperature is not None:
            settings["temperature"] = args.temperature
    except ProbeError as err:
        print(f"seedbench probe-skills: {err}", file=sys.stderr)
        return 2
    policy = load_policy(ModelConfig(name=args.model, device=args.device, dtype="fp32"), need_reference=False)
    result = probe(policy.model, policy.tokenizer, episodes, device=policy.device, temperature=settings["temperature"],
                   skill_block=settings["skill_block"], gate_beta=settings["gate_beta"], shuffle_seed=args.shuffle_seed)
    table = format_table(result)
    print(table)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        payload = {"run": str(run_dir), "model": args.model, "checksum": policy.checksum, **settings,
                   "shuffle_seed": args.shuffle_seed, "iterations": args.iterations, **result.__dict__}
        (out / "skill_probe.json").write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
        (out / "skill_probe.md").write_text(table + "\n")
    return 0
