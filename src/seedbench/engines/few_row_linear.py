"""Linear layers of a decode step computed weight-major on CPU in fp32: ``(W @ xᵀ)ᵀ`` instead of ``x @ Wᵀ``.

A decode step multiplies a few rows (one per sequence of the batch) by every weight matrix of the model,
so its time is the time to read the weights. On CPU, `F.linear` hands MKL the fp32 product ``x @ Wᵀ``, whose
few-row form reads the weight matrix at a fraction of the machine's bandwidth; the same product written
``(W @ xᵀ)ᵀ`` streams the weight matrix as the left operand. Measured on an AMD EPYC (Zen 4, 2 cores;
SmolLM2-135M shapes, weights not in cache; benchmarks/few_row_linear.py, docs/performance.md "Weight-major
decode"): at 2-4 rows the 49k-vocabulary projection 18-24 → 6-8 ms, the MLP's 1536×576 matrices 1.4-2.5×
faster; at 8-16 rows the smaller matrices come out slower, so only up to `MAX_ROWS` rows switch. bf16
products go through oneDNN, where the weight-major form measured 0.57-1.09×: bf16 layers keep `F.linear`. Same products, another
summation order: results agree to float rounding (far below the log-prob check's threshold).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

MAX_ROWS = 4  # more rows than this: F.linear (at 8 and 16 rows the smaller matrices measured slower)


@contextlib.contextmanager
def weight_major_linears(model: Any, max_rows: int = MAX_ROWS) -> Iterator[int]:
    """Within the block, every plain fp32 `nn.Linear` of `model` computes inputs of 2..`max_rows` rows
    weight-major; yields how many layers were switched. The model is restored on exit, also on error.
    Subclasses of `nn.Linear` and layers whose ``forward`` was already replaced (hooks of other libraries)
    are left alone."""
    import torch

    switched = []
    for module in model.modules():
        if (type(module) is torch.nn.Linear and module.weight.dtype == torch.float32
                and "forward" not in vars(module)):
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
