"""Linear layers of a decode step computed weight-major on CPU: ``(W @ xᵀ)ᵀ`` instead of ``x @ Wᵀ``.

A decode step multiplies a few rows (one per sequence of the batch) by every weight matrix of the model,
so its time is the time to read the weights. On CPU, `F.linear` hands MKL the product ``x @ Wᵀ``, whose
few-row form reads the weight matrix at a fraction of the machine's bandwidth; the same product written
``(W @ xᵀ)ᵀ`` streams the weight matrix as the left operand. Measured on the CI machine's CPU (SmolLM2-135M
shapes, 4 rows, weights not in cache): the MLP's 1536×576 matrices 0.60 → 0.26 ms, the 49k-vocabulary
projection 16.6 → 4.6 ms (docs/performance.md, "Weight-major decode"). Same products, another summation
order: results agree to float rounding (the log-prob check's threshold is orders of magnitude above it).

Inputs of one row (`F.linear`'s own vector path is as fast) and of more than `MAX_ROWS` rows (a prefill, a
training pass: the usual form is faster there) keep `F.linear`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

MAX_ROWS = 16  # more rows than this: F.linear (measured: no gain at 16 rows, a loss at 64)


@contextlib.contextmanager
def weight_major_linears(model: Any, max_rows: int = MAX_ROWS) -> Iterator[int]:
    """Within the block, every plain `nn.Linear` of `model` computes inputs of 2..`max_rows` rows
    weight-major; yields how many layers were switched. The model is restored on exit, also on error.
    Subclasses of `nn.Linear` and layers whose ``forward`` was already replaced (hooks of other libraries)
    are left alone."""
    import torch

    switched = []
    for module in model.modules():
        if type(module) is torch.nn.Linear and "forward" not in vars(module):
            module.forward = _weight_major_forward(module, max_rows)
            switched.append(module)
    try:
        yield len(switched)
    finally:
        for module in switched:
            del module.forward


def _weight_major_forward(module: Any, max_rows: int):
    import torch
    import torch.nn.functional as F

    def forward(x):
        rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
        if not 1 < rows <= max_rows:
            return F.linear(x, module.weight, module.bias)
        out = torch.mm(module.weight, x.reshape(rows, x.shape[-1]).t()).t()
        if module.bias is not None:
            out = out + module.bias
        return out.contiguous().reshape(*x.shape[:-1], out.shape[-1])

    return forward
