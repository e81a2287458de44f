"""Effect of ``optim.loss_agg_mode`` on one update of the README quick start's recorded batch.

    python benchmarks/loss_aggregation.py [--model smollm2-135m] [--dtype auto|fp32|bf16] [--bf16-compute auto|autocast|param_copy]
                                          [--batch PATH] [--out benchmarks/results/loss_aggregation.json]

The batch is the one `benchmarks/update_speed.py` records (one quick-start rollout). One update under
``global-token-mean`` (the trainer's rule before the reference rule became the default) records each
micro-batch's gradient contribution ``d_k`` (the accumulated gradient before and after its backward) and
its token count ``n_k``; the ``token-mean`` (reference, default) gradient of the same update is then
``Σ_k d_k · T / (n_k · K)`` with ``T`` the mini-batch's tokens and ``K`` its micro-batches, which is exactly
what that mode's weights do (`seedbench.agents.losses.loss_token_weights`; tests/test_loss_aggregation.py
checks the mode itself), at the cost of one update instead of two on a slow CPU. Reported: cosine and
norm ratio (default / old default) of the gradients before clipping. Then every response is cut to the
shortest response length, so every micro-batch has the same token count, where the two must agree.
The first line printed is the precision of the update's passes (``--dtype``, ``--bf16-compute``; as
`benchmarks/update_speed.py` prints it), also in the JSON.
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_speed import (  # noqa: E402
    DTYPES, QUICKSTART, active_advantages, add_bf16_compute, batch_path, make_trainer, policy_precision, print_precision,
    record_batch)


def gradients(trainer, prepared, trajectories):
    """(old default gradient, default gradient, micro-batch token counts) of one update; the weights stay put."""
    import torch

    model, cfg = trainer.policy.model, trainer.config.optim
    cfg.loss_agg_mode, cfg.grad_clip = "global-token-mean", 1e12  # the raw gradient: clipping hides the norm ratio
    params = [p for _, p in sorted(model.named_parameters()) if p.requires_grad]

    def flat():
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach().flatten().float()
                          for p in params])

    # running sums only (three flat copies of the gradient): a list of K contributions would not fit a CI box
    state = {"previous": None, "counts": [], "closed": 0}

    def close_micro_batch():  # weight the contribution of the micro-batch whose backward ran last
        now = flat()
        n = state["counts"][state["closed"]]
        state["token_mean"].add_(now - state["previous"], alpha=state["tokens"] / (n * state["K"]))
        state["previous"], state["closed"] = now, state["closed"] + 1

    def recording_loss(mb):
        if state["previous"] is None:
            state["previous"] = flat()
            state["token_mean"] = torch.zeros_like(state["previous"])
            state["tokens"], state["K"] = mb.minibatch_tokens, mb.micro_batches
        else:
            close_micro_batch()
        state["counts"].append(int(mb.mask.sum()))
        return real_loss(mb)

    real_loss, final = trainer.agent.loss, {}

    def step(*args, **kwargs):
        close_micro_batch()
        final["global"], final["token_mean"] = state["previous"], state["token_mean"]

    trainer.agent.loss, trainer.optimizer.step = recording_loss, step
    try:
        trainer.update(copy.deepcopy(prepared), trajectories)
    finally:
        del trainer.agent.loss, trainer.optimizer.step
    assert state["closed"] == len(state["counts"]) == state["K"], "one mini-batch expected"
    return final["global"], final["token_mean"], state["counts"]


def compare(a, b) -> dict:
    import torch

    a, b = a.double(), b.double()
    return {"cosine": float(torch.nn.functional.cosine_similarity(a, b, dim=0)),
            "norm_ratio": float(a.norm() / b.norm())}


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--config", default=str(QUICKSTART))
    p.add_argument("--batch", default=None)
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="the trainer's model.dtype (auto = bf16 on CPUs with AVX-512-BF16/AMX, else fp32); printed")
    add_bf16_compute(p)
    p.add_argument("--set", nargs="*", default=[])
    p.add_argument("--out", default="benchmarks/results/loss_aggregation.json")
    args = p.parse_args(argv)
    trainer = make_trainer(args, "grpo", Path(tempfile.mkdtemp(prefix="loss_agg_")))
    ran = print_precision(policy_precision(trainer.policy))
    trajectories, rewards = record_batch(trainer, batch_path(args))
    prepared = trainer.agent.prepare(trajectories, rewards, 1)
    forced = active_advantages(prepared)
    cfg = trainer.config.optim
    lengths = [len(s.response_ids) for s in prepared.samples]
    result = {**ran, "samples": len(lengths), "response_tokens": lengths, "mini_batch_size": cfg.mini_batch_size,
              "micro_batch_size": cfg.micro_batch_size, "advantages_forced": forced}
    old, default, counts = gradients(trainer, prepared, trajectories)
    result["micro_batch_tokens"] = counts
    result["token_mean_vs_global_token_mean"] = compare(default, old)
    print(f"micro-batch tokens {counts}: token-mean vs global-token-mean {result['token_mean_vs_global_token_mean']}",
          flush=True)
    shortest = min(lengths)
    equal = copy.deepcopy(prepared)
    for sample in equal.samples:  # same prompts, responses cut to one length: equal micro-batch token counts
        sample.response_ids = sample.response_ids[:shortest]
    old, default, counts = gradients(trainer, equal, [])
    result["equal_tokens"] = {"response_tokens": shortest, "micro_batch_tokens": counts, **compare(default, old)}
    print(f"equal token counts {counts}: {result['equal_tokens']}", flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    trainer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
