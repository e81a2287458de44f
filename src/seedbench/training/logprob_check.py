"""Do the engine's sampled log-probs match the trainer's recomputation?

PPO's ratio is exp(logp_new − logp_old). The trainer recomputes logp_old with its own forward pass; the
engine reports the log-probs it sampled with. When the two disagree (a bf16 engine against fp32 master
weights, a stale weight sync, a different attention kernel, a tokenizer mismatch), the sampled tokens
were drawn from a distribution other than the one the ratio assumes, which biases the update without
any error. This module measures the gap per token and flags it above a threshold, so a run records it
as ``rollout/logprob_abs_diff`` and warns instead of silently training off-policy.

The comparison is only meaningful at the same temperature: engines report log-probs of ``logits / T``
and the trainer scores at the rollout's temperature (``optim.score_temperature=sampling``, the default);
`recompute_logprobs` takes the temperature.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seedbench.models.vision import frames_digest, prompt_images

DEFAULT_THRESHOLD = 0.05
"""Mean |Δ log p| per token above which a run is flagged. A bf16 engine against bf16 autocast of the
same weights measured 0.01–0.03 on SmolLM2-135M (docs/performance.md); a stale weight sync or a wrong
prompt gives ≥ 0.1; fp32 against fp32 gives < 1e-4."""


@dataclass
class LogprobCheck:
    mean_abs_diff: float
    """Mean over all response tokens of |engine log p − recomputed log p|."""
    max_abs_diff: float
    tokens: int
    threshold: float
    length_mismatches: int = 0
    """Samples whose two log-prob lists differ in length (compared up to the shorter; always a bug)."""

    @property
    def flagged(self) -> bool:
        return self.mean_abs_diff > self.threshold or self.length_mismatches > 0

    def metrics(self, prefix: str = "rollout/") -> dict[str, float]:
        return {
            f"{prefix}logprob_abs_diff": self.mean_abs_diff,
            f"{prefix}logprob_abs_diff_max": self.max_abs_diff,
            f"{prefix}logprob_mismatch": float(self.flagged),
        }

    def message(self) -> str:
        text = (f"engine vs trainer log-probs: mean |Δ| = {self.mean_abs_diff:.4g} over {self.tokens} tokens "
                f"(max {self.max_abs_diff:.4g}, threshold {self.threshold:g})")
        if self.length_mismatches:
            text += f"; {self.length_mismatches} samples with different lengths"
        if self.flagged:
            text += ": MISMATCH, PPO ratios are biased (check dtype, weight sync and temperature)"
        return text


def compare_logprobs(sampled: Sequence[Sequence[float]], recomputed: Sequence[Sequence[float]],
                     threshold: float = DEFAULT_THRESHOLD) -> LogprobCheck:
    """Token-level comparison of two lists of per-sample log-prob lists (same order).

    Non-finite engine values (an engine may report -inf for a token outside top-p) count as a
    difference of +inf in the max and are left out of the mean, which they would otherwise swamp."""
    if len(sampled) != len(recomputed):
        raise ValueError(f"{len(sampled)} sampled rows but {len(recomputed)} recomputed rows")
    total, count, worst, mismatches = 0.0, 0, 0.0, 0
    for a, b in zip(sampled, recomputed):
        if len(a) != len(b):
            mismatches += 1
        for x, y in zip(a, b):
            diff = abs(float(x) - float(y))
            if math.isfinite(diff):
                total += diff
                count += 1
            worst = max(worst, diff)
    return LogprobCheck(mean_abs_diff=total / count if count else 0.0, max_abs_diff=worst, tokens=count,
                        threshold=threshold, length_mismatches=mismatches)


def sample_key(prompt_ids: Sequence[int], response_ids: Sequence[int]) -> tuple:
    """Ids plus the prompt's frames (a vision prompt's ids are equal for any image of the same size)."""
    return tuple(prompt_ids), frames_digest(prompt_images(prompt_ids)), tuple(response_ids)


def sampled_logprobs_by_ids(trajectories: Sequence[Any]) -> dict[tuple, list[float]]:
    """{(prompt ids, response ids): engine log-probs} over every step of `trajectories` (rollout
    `Trajectory` objects), to match train samples, which may be re-ordered or filtered, to their step."""
    table: dict[tuple, list[float]] = {}
    for traj in trajectories:
        for step in traj.steps:
            table[sample_key(step.prompt_ids, step.response_ids)] = list(step.sampled_logprobs)
    return table


def check_train_samples(samples: Sequence[Any], old_logp: Sequence[Sequence[float]], trajectories: Sequence[Any],
                        threshold: float = DEFAULT_THRESHOLD) -> LogprobCheck:
    """Compare the trainer's old log-probs (`old_logp[i]` for `samples[i]`, each with `prompt_ids` and
    `response_ids`) to the engine's, for the samples that are unchanged rollout steps. Samples built
    from other prompts (SEED's skill-augmented re-scoring) have no engine log-probs and are skipped."""
    table = sampled_logprobs_by_ids(trajectories)
    sampled, recomputed = [], []
    for sample, logp in zip(samples, old_logp):
        engine_logp = table.get(sample_key(sample.prompt_ids, sample.response_ids))
        if engine_logp is not None:
            sampled.append(engine_logp)
            recomputed.append(logp)
    return compare_logprobs(sampled, recomputed, threshold)


def recompute_logprobs(model: Any, prompts: Sequence[list[int]], responses: Sequence[list[int]], pad_id: int,
                       device: Any, *, temperature: float = 1.0, micro_batch_size: int = 8,
                       autocast: Any = None) -> list[list[float]]:
    """Log-probs of `responses` under ``logits / temperature`` of `model` (what an engine reports)."""
    from seedbench.models.scoring import score_responses

    return score_responses(model, list(prompts), list(responses), pad_id, device, micro_batch_size,
                           autocast_factory=(lambda: autocast) if autocast is not None else None,
                           temperature=temperature)


def check_engine(engine: Any, model: Any, tokenizer: Any, prompts: Sequence[list[int]], params: Any, device: Any,
                 *, threshold: float = DEFAULT_THRESHOLD, autocast: Any = None) -> LogprobCheck:
    """Generate from `engine`, recompute with `model` at the same temperature, compare (benchmarks, tests)."""
    generations = engine.generate(list(prompts), params)
    temperature = 1.0 if params.greedy else params.temperature
    recomputed = recompute_logprobs(model, prompts, [g.token_ids for g in generations], tokenizer.pad_token_id,
                                    device, temperature=temperature, autocast=autocast)
    keep = [i for i, g in enumerate(generations) if g.token_ids]
    return compare_logprobs([generations[i].logprobs for i in keep], [recomputed[i] for i in keep], threshold)
