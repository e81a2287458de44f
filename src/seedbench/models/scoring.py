"""Forward passes that score given response tokens under given prompts.

Used for the old/reference log-probs before an update, for the student log-probs inside it, and by SEED
to re-score the *identical* sampled response ids under a skill-augmented prompt; optionally with the
per-token entropies an entropy bonus needs.
"""

from __future__ import annotations

from typing import Any

import torch

from seedbench.models.packing import pack_batch, packed_logits, unflatten
from seedbench.models.vision import is_vision_model, placeholder_ids, vision_inputs
from seedbench.models.weights import base_model


def entropy_from_logits(logits):
    """Per-position entropy of softmax(logits): [B, L, V] → [B, L]."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def pad_batch(prompts: list[list[int]], responses: list[list[int]], pad_id: int):
    """Inputs laid out ``[left pad | prompt | response | right pad]``, so that every response starts at
    the same column ``P`` (the longest prompt) and the logits predicting response token ``j`` sit in
    column ``P - 1 + j`` of every row: a forward pass then needs the vocabulary projection only for the
    last ``L + 1`` columns (`response_logits`), not for the whole prompt (on a 49k vocabulary that
    projection is ~20 % of a forward's FLOPs and most of its activation memory).

    Returns (input_ids [B, P+L], attention_mask, position_ids, targets [B, L], mask [B, L]), ``L`` = the
    longest response. Position ids count real tokens only, as generation does with left padding."""
    width_p = max(len(p) for p in prompts)
    width_r = max(1, max(len(r) for r in responses))
    input_ids = torch.full((len(prompts), width_p + width_r), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width_p + width_r), dtype=torch.long)
    mask = torch.zeros((len(prompts), width_r), dtype=torch.float32)
    for row, (prompt, response) in enumerate(zip(prompts, responses)):
        start, end = width_p - len(prompt), width_p + len(response)
        input_ids[row, start:end] = torch.tensor([*prompt, *response], dtype=torch.long)
        attention[row, start:end] = 1
        mask[row, : len(response)] = 1.0
    positions = (attention.cumsum(dim=1) - 1).clamp(min=0)
    targets = input_ids[:, width_p:]
    return input_ids, attention, positions, targets, mask


def response_logits(model: Any, input_ids, attention, positions, response_width: int, **extra):
    """Logits [B, L, V] predicting the L response columns of a `pad_batch` layout (only those are
    projected onto the vocabulary; models without ``logits_to_keep`` project everything, then slice).
    `extra`: a vision model's pixel inputs (`seedbench.models.vision.vision_inputs`)."""
    try:
        logits = model(input_ids=input_ids, attention_mask=attention, position_ids=positions,
                       logits_to_keep=response_width + 1, **extra).logits
    except TypeError:  # an architecture whose forward has no logits_to_keep
        logits = model(input_ids=input_ids, attention_mask=attention, position_ids=positions, **extra).logits
    return logits[:, -(response_width + 1) : -1]


def _vision_extras(model: Any, prompts, input_ids, response_width: int, positions):
    """(extra forward kwargs, positions, placeholder ids) for a vision model; text models: ({}, positions, []).
    With images the model derives its 3-D M-RoPE positions from ``mm_token_type_ids`` and the grids, so no
    1-D positions are passed."""
    if not is_vision_model(model):
        return {}, positions, []
    ids = placeholder_ids(model)
    extra = vision_inputs(prompts, input_ids, input_ids.shape[1] - response_width, ids[0])
    return extra, (None if extra else positions), ids


def forward_logprobs(model: Any, prompts, responses, pad_id: int, device, *, with_entropy: bool = False,
                     autocast=None, temperature: float = 1.0, packing: str = "off"):
    """Log-probs (and optionally entropies) of each response token under ``logits / temperature``:
    tensors [B, L] plus mask [B, L]. Prompt tokens are never scored, so they can never receive loss.

    `packing` (``optim.packing``): ``off`` = padded rows (`pad_batch`); ``packed`` / ``shared_prefix`` = one
    row without padding, the common prompt prefix once for ``shared_prefix`` (`seedbench.models.packing`);
    the same numbers up to float summation order. Vision models and flash-attention kernels always use the
    padded rows (`_packable`)."""
    ctx = autocast if autocast is not None else torch.autocast(device_type=torch.device(device).type, enabled=False)
    if packing != "off" and any(responses) and _packable(model):
        return _packed_logprobs(model, prompts, responses, device, ctx, with_entropy, temperature,
                                shared_prefix=packing == "shared_prefix")
    input_ids, attention, positions, targets, mask = (t.to(device) for t in pad_batch(prompts, responses, pad_id))
    extra, positions, never = _vision_extras(model, prompts, input_ids, targets.shape[1], positions)
    with ctx:
        logits = response_logits(model, input_ids, attention, positions, targets.shape[1], **extra)
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    if never:  # the sampler never draws a vision placeholder, so its distribution excludes them too
        logits = logits.index_fill(-1, torch.tensor(never, device=logits.device), torch.finfo(logits.dtype).min)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    entropy = entropy_from_logits(logits) if with_entropy else None
    return logp * mask, entropy, mask


def _packable(model: Any) -> bool:
    """Text models whose attention takes a 4-D mask (SDPA, eager, flex). Vision models merge image features
    at placeholder positions a packed row would move; flash-attention kernels take no 4-D mask."""
    implementation = str(getattr(getattr(base_model(model), "config", None), "_attn_implementation", "sdpa") or "sdpa")
    return not is_vision_model(model) and not implementation.startswith("flash")


def _packed_logprobs(model, prompts, responses, device, ctx, with_entropy: bool, temperature: float, *,
                     shared_prefix: bool):
    packed = pack_batch(prompts, responses, shared_prefix=shared_prefix)
    mask = packed.mask.to(device)
    with ctx:
        logits = packed_logits(model, packed, device)
    logits = logits.float()
    if temperature != 1.0:
        logits = logits / temperature
    logp = torch.log_softmax(logits, dim=-1).gather(-1, packed.targets.to(device).unsqueeze(-1)).squeeze(-1)
    entropy = unflatten(entropy_from_logits(logits), mask) if with_entropy else None
    return unflatten(logp, mask), entropy, mask


@torch.no_grad()
def score_responses(model: Any, prompts, responses, pad_id: int, device, micro_batch_size: int = 8,
                    autocast_factory=None, temperature: float = 1.0, packing: str = "off") -> list[list[float]]:
    """Per-token log-probs of each (prompt, response) pair, no gradient, in micro-batches (`packing`: see
    `forward_logprobs`). With ``shared_prefix`` the pairs are grouped into micro-batches in prompt order, so
    that prompts sharing prefixes land in one prefix tree; each pair's values do not depend on its company."""
    was_training = model.training
    model.eval()
    order = list(range(len(prompts)))
    if packing == "shared_prefix":
        order.sort(key=lambda i: list(prompts[i]))
    out: list[list[float] | None] = [None] * len(prompts)
    for start in range(0, len(order), micro_batch_size):
        chunk = order[start : start + micro_batch_size]
        p, r = [prompts[i] for i in chunk], [responses[i] for i in chunk]  # prompts keep their type (vision frames)
        logp, _, _ = forward_logprobs(model, p, r, pad_id, device, temperature=temperature, packing=packing,
                                      autocast=autocast_factory() if autocast_factory else None)
        for row, i in enumerate(chunk):
            out[i] = logp[row, : len(r[row])].float().cpu().tolist()
    if was_training:
        model.train()
    return out
