"""Few-row products ``x @ Wᵀ`` (`F.linear`) against ``(W @ xᵀ)ᵀ`` at SmolLM2-135M's matrix shapes.

    python benchmarks/few_row_linear.py [--rows 2,4,8,16] [--dtypes float32,bfloat16] [--matrices all]
                                        [--repeats 5]
                                        [--out benchmarks/results/few_row_linear.json]

A decode step multiplies one row per sequence by every weight matrix, so what counts is how fast each form
reads a weight matrix that is not in cache: every round multiplies each of up to 60 distinct matrices
once (the decode of a 30-layer model reads each of its matrices once per step). Medians over the rounds.
The engine switch this measures is ``hf.decode_linear`` (`seedbench.engines.few_row_linear`).
"""

from __future__ import annotations

import argparse
import statistics
import time

from update_speed import write_result

SHAPES = {"vocabulary": (49152, 576), "mlp_gate_up": (1536, 576), "mlp_down": (576, 1536), "q_o": (576, 576),
          "k_v": (192, 576)}  # (out, in) of SmolLM2-135M's weight matrices


def per_call_ms(product, weights, inputs, repeats: int) -> float:
    product(weights[0], inputs[0])  # warm-up
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for w, x in zip(weights, inputs):
            product(w, x)
        rounds.append((time.perf_counter() - start) / len(weights))
    return statistics.median(rounds) * 1e3


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default="2,4,8,16")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--matrices", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES)}")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default="benchmarks/results/few_row_linear.json")
    args = p.parse_args(argv)
    from seedbench import threads

    threads.configure()  # as the seedbench command runs, before torch loads
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    standard = lambda w, x: F.linear(x, w)  # noqa: E731
    weight_major = lambda w, x: torch.mm(w, x.t()).t().contiguous()  # noqa: E731
    results = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for name in args.matrices.split(","):
            out_features, in_features = SHAPES[name]
            count = 4 if out_features > 10_000 else 60  # 4 vocabulary matrices already exceed any cache
            weights = [torch.randn(out_features, in_features, dtype=dtype) for _ in range(count)]
            for rows in (int(r) for r in args.rows.split(",")):
                inputs = [torch.randn(rows, in_features, dtype=dtype) for _ in range(count)]
                a = per_call_ms(standard, weights, inputs, args.repeats)
                b = per_call_ms(weight_major, weights, inputs, args.repeats)
                reference = standard(weights[0], inputs[0]).float()
                gap = ((weight_major(weights[0], inputs[0]).float() - reference).abs().max() / reference.abs().max()).item()
                results.append({"dtype": dtype_name, "matrix": name, "shape": [out_features, in_features], "rows": rows,
                                "x_wt_ms": a, "w_xt_ms": b, "speedup": a / b, "max_relative_difference": gap})
                print(f"{dtype_name:8} {name:11} {out_features:>5}x{in_features:<4} rows {rows:2}: x@W^T {a:7.3f} ms  (W@x^T)^T {b:7.3f} ms  {a / b:5.2f}x  (max rel. diff {gap:.1e})",
                      flush=True)
    write_result(args.out, {"benchmark": "few_row_linear", "torch": torch.__version__, "results": results})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
