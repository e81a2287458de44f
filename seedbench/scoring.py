"""Forward passes that score given response tokens under given prompts.

Used for the old/reference log-probs before an update, for the student log-probs inside it, and by SEED
to re-score the *identical* sampled response ids under a skill-augmented prompt.
"""

from __future__ import annotations

from typing import Any

import torch

from seedbench.agents.losses import entropy_from_logits


def pad_batch(prompts: list[list[int]], responses: list[list[int]], pad_id: int):
    """Right-padded [B, P+R] inputs plus index tensors locating each response token.

    Returns (input_ids, attention_mask, gather_index [B, L], mask [B, L]) where ``L`` = longest
    response; ``gather_index[b, j]`` is the position whose logits predict response token j."""
    lengths = [len(p) + len(r) for p, r in zip(prompts, responses)]
    width, resp_width = max(lengths), max(1, max(len(r) for r in responses))
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    index = torch.zeros((len(prompts), resp_width), dtype=torch.long)
    mask = torch.zeros((len(prompts), resp_width), dtype=torch.float32)
    for row, (prompt, response) in enumerate(zip(prompts, responses)):
        ids = prompt + response
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention[row, : len(ids)] = 1
        n = len(response)
        index[row, :n] = torch.arange(len(prompt) - 1, len(prompt) - 1 + n)
        mask[row, :n] = 1.0
    return input_ids, attention, index, mask


def forward_logprobs(model: Any, prompts, responses, pad_id: int, device, *, with_entropy: bool = False,
                     autocast=None):
    """Log-probs (and optionally entropies) of each response token: tensors [B, L] plus mask [B, L].
    Prompt tokens are never scored, so they can never receive loss."""
    input_ids, attention, index, mask = pad_batch(prompts, responses, pad_id)
    input_ids, attention, index, mask = (t.to(device) for t in (input_ids, attention, index, mask))
    targets = torch.gather(input_ids, 1, (index + 1).clamp(max=input_ids.shape[1] - 1))
    ctx = autocast if autocast is not None else torch.autocast(device_type=device.type, enabled=False)
    with ctx:
        logits = model(input_ids=input_ids, attention_mask=attention).logits
    picked = torch.gather(logits, 1, index.unsqueeze(-1).expand(-1, -1, logits.shape[-1])).float()  # [B, L, V]
    logp = torch.log_softmax(picked, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    entropy = entropy_from_logits(picked) if with_entropy else None
    return logp * mask, entropy, mask


@torch.no_grad()
def score_responses(model: Any, prompts, responses, pad_id: int, device, micro_batch_size: int = 8,
                    autocast_factory=None) -> list[list[float]]:
    """Per-token log-probs of each (prompt, response) pair, no gradient, in micro-batches."""
    was_training = model.training
    model.eval()
    out: list[list[float]] = []
    for start in range(0, len(prompts), micro_batch_size):
        p, r = prompts[start : start + micro_batch_size], responses[start : start + micro_batch_size]
        logp, _, _ = forward_logprobs(model, p, r, pad_id, device,
                                      autocast=autocast_factory() if autocast_factory else None)
        out.extend(logp[row, : len(resp)].float().cpu().tolist() for row, resp in enumerate(r))
    if was_training:
        model.train()
    return out
