"""One micro-batch of (prompt, response) pairs packed into a single row, without padding, optionally with
the prompts' common prefix computed once (``optim.packing``).

The padded layout (`seedbench.models.scoring.pad_batch`) computes every prompt in full and pads every
row to the longest one. Step samples of an update share long prompt prefixes (the instruction and the
rules; a GRPO group's step-0 prompts are identical), and a causal model's hidden states of a prefix do not
depend on what follows it. So a packed row holds the common prefix once, then each member's own
remainder and response as a *segment*; a block mask lets a segment see the prefix and itself, never
another segment, and position ids continue from the prefix exactly as in the member's own sequence.
Every response token is then predicted from the same context and positions as in the padded layout: the
log-probs are equal up to floating-point summation order, and the prefix's gradient is the sum of what
its copies would receive. Only the columns that predict response tokens are projected onto the
vocabulary (`logit_index`).

Layout (``P`` = shared prefix length, 0 for ``packed``)::

    [ prefix (P) | prompt_0[P:] + response_0 | prompt_1[P:] + response_1 | ... ]

Vision prompts (`seedbench.models.vision.PromptIds`) are not packed: their image features are merged at
placeholder positions that the packed row would reorder; `forward_logprobs` keeps the padded layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

LAYOUTS = ("off", "packed", "shared_prefix")
"""``optim.packing``: ``off`` (padded rows, the reference layout), ``packed`` (one row, no padding),
``shared_prefix`` (one row, the micro-batch's common prompt prefix computed once)."""


@dataclass
class PackedBatch:
    input_ids: torch.Tensor
    """[1, N] the packed row."""
    positions: torch.Tensor
    """[1, N] each token's position in its member's own sequence."""
    attention: torch.Tensor
    """[1, 1, N, N] bool, True where a query column may attend to a key column."""
    logit_index: torch.Tensor
    """[T] row columns whose logits predict the response tokens, member by member (T = all response tokens)."""
    targets: torch.Tensor
    """[T] the response tokens, in the same order."""
    mask: torch.Tensor
    """[B, L] 1 on real response tokens (``L`` = the longest response), the padded layout's mask."""
    prefix_length: int


def common_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix shared by every prompt."""
    first, length = prompts[0], min(len(p) for p in prompts)
    for prompt in prompts[1:]:
        k = 0
        while k < length and prompt[k] == first[k]:
            k += 1
        length = k
    return length


def pack_batch(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], *,
               shared_prefix: bool = True, prefix_length: int | None = None) -> PackedBatch:
    """The packed row of `prompts` + `responses`. `prefix_length` overrides the common prefix (tests use it
    to prove that a wrong split is caught); it must not exceed the shortest prompt."""
    if any(len(p) == 0 for p in prompts):
        raise ValueError("pack_batch: every prompt needs at least one token (it predicts the first response token)")
    k = (common_prefix_length(prompts) if prefix_length is None else prefix_length) if shared_prefix else 0
    if k > min(len(p) for p in prompts):
        raise ValueError(f"pack_batch: prefix length {k} exceeds the shortest prompt")
    ids: list[int] = list(prompts[0][:k])
    positions: list[int] = list(range(k))
    segment: list[int] = [-1] * k  # -1 = the shared prefix, visible to every segment
    logit_index: list[int] = []
    targets: list[int] = []
    for member, (prompt, response) in enumerate(zip(prompts, responses)):
        start = len(ids)
        own = list(prompt[k:]) + list(response)
        ids.extend(own)
        positions.extend(range(k, k + len(own)))
        segment.extend([member] * len(own))

        def column(t: int) -> int:  # row column of position t of this member's own sequence
            return t if t < k else start + (t - k)

        logit_index.extend(column(len(prompt) + j - 1) for j in range(len(response)))
        targets.extend(response)
    seg = torch.tensor(segment)
    n = len(ids)
    causal = torch.ones((n, n), dtype=torch.bool).tril()
    visible = (seg[:, None] == seg[None, :]) | (seg[None, :] == -1)
    width = max(1, max(len(r) for r in responses))
    mask = torch.zeros((len(responses), width), dtype=torch.float32)
    for row, response in enumerate(responses):
        mask[row, : len(response)] = 1.0
    return PackedBatch(input_ids=torch.tensor([ids], dtype=torch.long), positions=torch.tensor([positions]),
                       attention=(causal & visible)[None, None],
                       logit_index=torch.tensor(logit_index, dtype=torch.long),
                       targets=torch.tensor(targets, dtype=torch.long), mask=mask, prefix_length=k)


def attention_mask_for(model, allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The 4-D mask in the form the model's attention takes: bool for SDPA/flex (True = attend), an additive
    float mask (0 / most negative) for the eager kernel, which adds the mask to the scores."""
    if getattr(getattr(model, "config", None), "_attn_implementation", "sdpa") == "eager":
        return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return allowed


def packed_logits(model, packed: PackedBatch, device) -> torch.Tensor:
    """Logits [T, V] of the response-predicting columns of one packed row."""
    dtype = next(model.parameters()).dtype
    ids, positions = packed.input_ids.to(device), packed.positions.to(device)
    attention = attention_mask_for(model, packed.attention, dtype).to(device)
    index = packed.logit_index.to(device)
    try:
        logits = model(input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=index).logits
    except TypeError:  # an architecture whose forward has no logits_to_keep
        logits = model(input_ids=ids, attention_mask=attention, position_ids=positions).logits[:, index]
    return logits[0]


def unflatten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token values [T] (member by member) → [B, L] with zeros on padding (differentiable)."""
    out = torch.zeros(mask.shape, dtype=values.dtype, device=values.device)
    return out.masked_scatter(mask.to(values.device).bool(), values)
