"""Run under torchrun by tests/test_vllm_placement.py: every rank builds its own CPU vLLM engine next to the
process group torchrun started (``external_launcher``), generates greedily and sampled, syncs weights, and
rank 0 prints every rank's results as one JSON line; then the engine is closed."""

from __future__ import annotations

import json
import os

import torch
import torch.distributed as dist

from seedbench.engines.base import SamplingParams
from seedbench.engines.vllm import VLLMEngine
from seedbench.models.tiny import tiny_model, tiny_tokenizer


def main() -> None:
    dist.init_process_group("gloo")
    tok = tiny_tokenizer()
    model = tiny_model(tok, hidden_size=128, seed=0).eval()  # head size 32: vLLM's CPU attention needs it
    engine = VLLMEngine(model, tok, device=torch.device("cpu"), dtype=torch.float32, seed=3, cpu_kv_cache_gib=0.25,
                        required_context=512)
    prompt = tok("push the box up", add_special_tokens=False)["input_ids"]
    greedy = engine.generate([prompt], SamplingParams(max_new_tokens=6, greedy=True, stop=[]))[0].token_ids
    sampled = engine.generate([prompt] * 2, SamplingParams(max_new_tokens=6, temperature=1.0, stop=[]))
    engine.sync_weights()
    row = {"rank": dist.get_rank(), "local_rank": int(os.environ["LOCAL_RANK"]), "seed": engine.llm.llm_engine
           .vllm_config.model_config.seed, "max_model_len": engine.max_model_len, "greedy": greedy,
           "sampled": [g.token_ids for g in sampled]}
    rows = [None] * dist.get_world_size()
    dist.all_gather_object(rows, row)
    if dist.get_rank() == 0:
        print("RANKS " + json.dumps(rows), flush=True)
    engine.close()
    print(f"PROCESS_GROUP_AFTER_CLOSE {dist.is_initialized()}", flush=True)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
