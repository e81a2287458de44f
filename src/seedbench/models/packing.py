"""One micro-batch of (prompt, response) pairs packed into a single row, without padding, optionally with
every prompt prefix that members share computed once (``optim.packing``).

The padded layout (`seedbench.models.scoring.pad_batch`) computes every prompt in full and pads every
row to the longest one. Step samples of an update share long prompt prefixes (the instruction and the
rules; a GRPO group's step-0 prompts are identical; an episode's later steps repeat its earlier history),
and a causal model's hidden states of a prefix do not depend on what follows it. So ``shared_prefix``
lays the micro-batch's prompts out as a *prefix tree*: each token that several prompts share sits in the
row once, as part of a *run* (a stretch of the tree without branches), and a run's tokens attend to the
runs on their path from the root (their *ancestors*) and causally to themselves, never to another branch.
Position ids continue along the path exactly as in the member's own sequence. Every response token is
then predicted from the same context and positions as in the padded layout: the log-probs are equal up
to floating-point summation order, and a shared token's gradient is the sum of what its copies would
receive. Only the columns that predict response tokens are projected onto the vocabulary
(`logit_index`). ``packed`` is the same row with no sharing (one run per member).

Layout: runs in depth-first order of the tree (members sorted by prompt), e.g. for prompts ``ab|c``,
``ab|d`` and ``x``::

    [ ab | c + response_0 | d + response_1 | x + response_2 ]     runs 1 and 2 have ancestor run 0

The attention over that structure runs one small attention per run (`seedbench.models.tree_attention`),
so its cost is the sum over runs of run length × path length rather than the square of the row; models
whose attention cannot take it (eager kernels, activation checkpointing) get the equivalent 4-D mask.

Vision prompts (`seedbench.prompt.Prompt`) are not packed: their image features are merged at
placeholder positions that the packed row would reorder; `forward_logprobs` keeps the padded layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from seedbench.models.tree_attention import packed_forward, supports_tree_attention
from seedbench.models.weights import base_model

LAYOUTS = ("off", "packed", "shared_prefix")
"""``optim.packing``: ``off`` (padded rows, the reference layout), ``packed`` (one row, no padding),
``shared_prefix`` (one row, every prompt prefix shared by members of the micro-batch computed once)."""


@dataclass
class Run:
    """A stretch of the packed row whose tokens share one path from the root: columns ``[start, end)``,
    attending to the columns of `ancestors` (in path order) and causally to themselves."""

    start: int
    end: int
    ancestors: tuple[int, ...] = ()
    """Indices of the runs on the path above this one, root first."""


@dataclass
class PackedBatch:
    input_ids: torch.Tensor
    """[1, N] the packed row."""
    positions: torch.Tensor
    """[1, N] each token's position in its member's own sequence."""
    runs: list[Run]
    """The row's runs in column order; they cover ``[0, N)`` without gaps."""
    logit_index: torch.Tensor
    """[T] row columns whose logits predict the response tokens, member by member (T = all response tokens)."""
    targets: torch.Tensor
    """[T] the response tokens, in the same order."""
    mask: torch.Tensor
    """[B, L] 1 on real response tokens (``L`` = the longest response), the padded layout's mask."""
    prefix_length: int
    """Tokens every member shares (the root run's length; 0 when the members share nothing)."""
    _attention: torch.Tensor | None = field(default=None, init=False, repr=False)

    @property
    def attention(self) -> torch.Tensor:
        """[1, 1, N, N] bool, True where a query column may attend to a key column: the runs' structure as
        one mask, for attention kernels that take a mask (`attention_mask_for`). Built on first use."""
        if self._attention is None:
            self._attention = runs_mask(self.runs, self.input_ids.shape[1])
        return self._attention

    @attention.setter
    def attention(self, value: torch.Tensor) -> None:
        self._attention = value


def runs_mask(runs: Sequence[Run], n: int) -> torch.Tensor:
    """The [1, 1, n, n] bool mask of `runs`: each run sees its ancestors' columns and, causally, its own."""
    allowed = torch.zeros((n, n), dtype=torch.bool)
    for run in runs:
        width = run.end - run.start
        allowed[run.start : run.end, run.start : run.end] = torch.ones((width, width), dtype=torch.bool).tril()
        for a in run.ancestors:
            allowed[run.start : run.end, runs[a].start : runs[a].end] = True
    return allowed[None, None]


def common_prefix_length(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix shared by every prompt."""
    first, length = prompts[0], min(len(p) for p in prompts)
    for prompt in prompts[1:]:
        k = 0
        while k < length and prompt[k] == first[k]:
            k += 1
        length = k
    return length


class _RowBuilder:
    """Appends runs to the packed row and remembers, per member, the columns of its path by depth."""

    def __init__(self, prompts, responses):
        self.prompts, self.responses = prompts, responses
        self.ids: list[int] = []
        self.positions: list[int] = []
        self.runs: list[Run] = []
        self.paths: list[list[tuple[int, int]]] = [[] for _ in prompts]  # member → [(depth, column)] run starts

    def add_run(self, tokens: Sequence[int], depth: int, ancestors: tuple[int, ...], members: Sequence[int]) -> int:
        start = len(self.ids)
        self.ids.extend(tokens)
        self.positions.extend(range(depth, depth + len(tokens)))
        self.runs.append(Run(start, len(self.ids), ancestors))
        for m in members:
            self.paths[m].append((depth, start))
        return len(self.runs) - 1

    def root_length(self) -> int:
        """Tokens on every member's path: the first run's, when there are several members and every path
        starts with it; else 0."""
        if len(self.paths) < 2 or any(path[0][1] != 0 for path in self.paths):
            return 0
        return self.runs[0].end - self.runs[0].start

    def column(self, member: int, t: int) -> int:
        """Row column of position `t` of `member`'s own sequence."""
        depth, start = max(entry for entry in self.paths[member] if entry[0] <= t)
        return start + (t - depth)

    def tree(self, members: list[int], depth: int, ancestors: tuple[int, ...]) -> None:
        """Lay out `members` (sorted by prompt, sharing their first `depth` prompt tokens) below `ancestors`:
        the tokens they all share next as one run, then each branch; a member alone takes the rest of its
        prompt and its response as its own run."""
        if len(members) == 1:
            m = members[0]
            self.add_run(list(self.prompts[m][depth:]) + list(self.responses[m]), depth, ancestors, members)
            return
        shared = common_prefix_length([self.prompts[m][depth:] for m in members])
        if shared:
            run = self.add_run(self.prompts[members[0]][depth : depth + shared], depth, ancestors, members)
            depth, ancestors = depth + shared, ancestors + (run,)
        branches: dict[int, list[int]] = {}
        for m in members:  # a prompt that ends here is a branch of its own (its response alone)
            key = self.prompts[m][depth] if depth < len(self.prompts[m]) else -1 - m
            branches.setdefault(key, []).append(m)
        for branch in branches.values():
            if all(depth == len(self.prompts[m]) for m in branch):
                self.add_run(list(self.responses[branch[0]]), depth, ancestors, branch)
            else:
                self.tree(branch, depth, ancestors)


def pack_batch(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]], *,
               shared_prefix: bool = True, prefix_length: int | None = None) -> PackedBatch:
    """The packed row of `prompts` + `responses`: the prefix tree of the prompts (`shared_prefix`), or one
    run per member. `prefix_length` forces a two-level layout instead, one root run of that many tokens
    and one run per member below it (tests use it to prove that a wrong split is caught); it must not
    exceed the shortest prompt."""
    if any(len(p) == 0 for p in prompts):
        raise ValueError("pack_batch: every prompt needs at least one token (it predicts the first response token)")
    if prefix_length is not None and prefix_length > min(len(p) for p in prompts):
        raise ValueError(f"pack_batch: prefix length {prefix_length} exceeds the shortest prompt")
    builder = _RowBuilder(prompts, responses)
    members = list(range(len(prompts)))
    if prefix_length is not None and shared_prefix:
        root = builder.add_run(prompts[0][:prefix_length], 0, (), members) if prefix_length else None
        for m in members:
            builder.add_run(list(prompts[m][prefix_length:]) + list(responses[m]), prefix_length,
                            () if root is None else (root,), [m])
    elif shared_prefix:
        builder.tree(sorted(members, key=lambda m: list(prompts[m])), 0, ())
    else:
        for m in members:
            builder.add_run(list(prompts[m]) + list(responses[m]), 0, (), [m])
    logit_index = [builder.column(m, len(prompts[m]) + j - 1) for m in members for j in range(len(responses[m]))]
    targets = [t for m in members for t in responses[m]]
    width = max(1, max(len(r) for r in responses))
    mask = torch.zeros((len(responses), width), dtype=torch.float32)
    for row, response in enumerate(responses):
        mask[row, : len(response)] = 1.0
    return PackedBatch(input_ids=torch.tensor([builder.ids], dtype=torch.long),
                       positions=torch.tensor([builder.positions]), runs=builder.runs,
                       logit_index=torch.tensor(logit_index, dtype=torch.long),
                       targets=torch.tensor(targets, dtype=torch.long), mask=mask,
                       prefix_length=builder.root_length() if shared_prefix else 0)


def attention_mask_for(model, allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The 4-D mask in the form the model's attention takes: bool for SDPA/flex (True = attend), an additive
    float mask (0 / most negative) for the eager kernel, which adds the mask to the scores."""
    if getattr(getattr(model, "config", None), "_attn_implementation", "sdpa") == "eager":
        return torch.zeros(allowed.shape, dtype=dtype).masked_fill(~allowed, torch.finfo(dtype).min)
    return allowed


def packed_logits(model, packed: PackedBatch, device) -> torch.Tensor:
    """Logits [T, V] of the response-predicting columns of one packed row: through the runs' attention
    (`seedbench.models.tree_attention`) where the model supports it, else through the row's 4-D mask."""
    ids, positions = packed.input_ids.to(device), packed.positions.to(device)
    index = packed.logit_index.to(device)
    if supports_tree_attention(base_model(model), device):
        return packed_forward(model, packed.runs, input_ids=ids, position_ids=positions, logits_to_keep=index).logits[0]
    dtype = next(model.parameters()).dtype
    attention = attention_mask_for(model, packed.attention, dtype).to(device)
    try:
        logits = model(input_ids=ids, attention_mask=attention, position_ids=positions, logits_to_keep=index).logits
    except TypeError:  # an architecture whose forward has no logits_to_keep
        logits = model(input_ids=ids, attention_mask=attention, position_ids=positions).logits[:, index]
    return logits[0]


def unflatten(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token values [T] (member by member) → [B, L] with zeros on padding (differentiable)."""
    out = torch.zeros(mask.shape, dtype=values.dtype, device=values.device)
    return out.masked_scatter(mask.to(values.device).bool(), values)
