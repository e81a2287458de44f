"""Effect of ``optim.loss_agg_mode`` on one update of the README quick start's recorded batch.

    python benchmarks/loss_aggregation.py [--model smollm2-135m] [--batch PATH] [--out benchmarks/results/loss_aggregation.json]

The batch is the one `benchmarks/update_speed.py` records (one quick-start rollout). From the same weights,
one update per mode; the gradient the optimizer would step with (before clipping) is captured and compared
with the ``global-token-mean`` one (the trainer's rule before the reference rule became the default):
cosine and norm ratio. Then every response is cut to the shortest response length, so every micro-batch
has the same token count, where ``token-mean`` and ``global-token-mean`` must agree (cosine 1, ratio 1).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import QUICKSTART, active_advantages, batch_path, make_trainer, record_batch  # noqa: E402

MODES = ("global-token-mean", "token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


def gradient(trainer, prepared, trajectories, mode: str):
    import torch

    trainer.config.optim.loss_agg_mode = mode
    grads = {}
    trainer.optimizer.step = lambda *a, **k: grads.update(
        {n: p.grad.detach().clone() for n, p in trainer.policy.model.named_parameters() if p.grad is not None})
    trainer.config.optim.grad_clip = 1e12  # the raw gradient; clipping would hide the norm ratio
    trainer.update(copy.deepcopy(prepared), trajectories)
    del trainer.optimizer.step
    return torch.cat([g.flatten().double() for _, g in sorted(grads.items())])


def compare(a, b) -> dict:
    import torch

    return {"cosine": float(torch.nn.functional.cosine_similarity(a, b, dim=0)),
            "norm_ratio": float(a.norm() / b.norm())}


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--config", default=str(QUICKSTART))
    p.add_argument("--batch", default=None)
    p.add_argument("--set", nargs="*", default=[])
    p.add_argument("--out", default="benchmarks/results/loss_aggregation.json")
    args = p.parse_args(argv)
    trainer = make_trainer(args, "grpo", Path(tempfile.mkdtemp(prefix="loss_agg_")))
    trajectories, rewards = record_batch(trainer, batch_path(args))
    prepared = trainer.agent.prepare(trajectories, rewards, 1)
    forced = active_advantages(prepared)
    cfg = trainer.config.optim
    lengths = [len(s.response_ids) for s in prepared.samples]
    result = {"samples": len(lengths), "response_tokens": lengths, "mini_batch_size": cfg.mini_batch_size,
              "micro_batch_size": cfg.micro_batch_size, "advantages_forced": forced, "vs_global_token_mean": {}}
    grads = {mode: gradient(trainer, prepared, trajectories, mode) for mode in MODES}
    for mode in MODES[1:]:
        result["vs_global_token_mean"][mode] = compare(grads[mode], grads["global-token-mean"])
        print(f"{mode:>20} vs global-token-mean: {result['vs_global_token_mean'][mode]}", flush=True)
    shortest = min(lengths)
    equal = copy.deepcopy(prepared)
    for sample in equal.samples:  # same prompts, responses cut to one length: equal micro-batch token counts
        sample.response_ids = sample.response_ids[:shortest]
    result["equal_tokens"] = {"response_tokens": shortest, **compare(
        gradient(trainer, equal, [], "token-mean"), gradient(trainer, equal, [], "global-token-mean"))}
    print(f"equal token counts ({shortest} per response): {result['equal_tokens']}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    trainer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
