"""Generation engines: token ids in, sampled token ids and their log-probs out.

Token-in/token-out: the trainer trains on exactly the ids an engine sampled, never on re-tokenized text
(re-tokenizing decoded text can change the ids and silently corrupt PPO ratios).

`HFEngine` batches `transformers` ``generate`` (left padding, KV cache). The trainer keeps fp32 master
weights (bf16 weights cannot absorb 1e-6-sized AdamW steps); when the compute dtype is lower (bf16 by
default), the engine generates from its own low-precision copy, refreshed by `sync_weights` after every
update, like a separate inference engine would be. Other engines (vLLM) implement the same interface.

Speed switches (`HFEngine` arguments, the run config's ``hf`` section; docs/engines.md), each exact: the
sampled tokens are drawn from the same distribution and their log-probs equal the trainer's recomputation
within the log-prob check's threshold (tests/test_generation_paths.py):

* ``kv_cache="static"``: a KV cache allocated once per `generate` call at its final length, instead of one
  grown by concatenation every step (a decode step at batch 16 spent 25 % of its time copying the growing
  cache; measured 1.14× at batch 4 and 1.31× at batch 16 on CPU). Never compiled (`disable_compile`):
  every call has its own prompt width, so a compiled decode would recompile per call.
* ``share_prompt_prefill=True``: identical prompts in one batch (a GRPO group's members at step 0 see the
  same prompt) are prefilled once and their KV cache is copied to the other members; prefill is most of a
  rollout step's generation time on CPU.
* ``prefill="per_prompt"`` (``auto``: on CPU, for batches of prompts of ≥ 1,024 tokens): every distinct
  prompt is prefilled alone, without padding, so
  attention runs causally over the prompt's own tokens, not over the left-padded width and the empty
  slots of a static cache under a mask (4 SEED analysis prompts of ~1,870 tokens: 21-24 s instead of
  35-37 s). The rows' caches are then laid out left-padded, as the batched prefill lays them out. On a GPU
  one forward per prompt is launch-bound, so ``auto`` keeps the batched prefill there.
* ``sampler="fused"``: the token is drawn inside the log-prob recorder from the log-softmax it computes
  anyway, and `generate` only picks it (greedy over a one-hot mask): no second temperature division,
  softmax and multinomial over the vocabulary. Same distribution, another random stream than `generate`'s
  own sampler (so a seed gives other rollouts than with ``sampler="generate"``); top-p < 1 keeps
  `generate`'s sampler.
"""

from __future__ import annotations

import contextlib
from typing import Any

from seedbench.engines.base import Generation, SamplingParams, eos_ids, response_length
from seedbench.engines.few_row_linear import weight_major_linears
from seedbench.models.vision import is_vision_model, placeholder_ids, vision_inputs
from seedbench.models.weights import frozen_copy, merged_weights
from seedbench.prompt import PromptLike


KV_CACHES = ("dynamic", "static")
SAMPLERS = ("generate", "fused")
PREFILLS = ("auto", "padded", "per_prompt")
DECODE_LINEARS = ("auto", "standard", "weight_major")
PER_PROMPT_MIN_WIDTH = 1024  # ``prefill="auto"``: prompts at least this long are prefilled one by one on CPU


class HFEngine:
    """Batched `generate` over the policy's own model (shared weights, so `sync_weights` is a no-op)."""

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, device: Any, batch_size: int = 32, dtype: Any = None, *,
                 kv_cache: str = "static", share_prompt_prefill: bool = True, sampler: str = "generate",
                 prefill: str = "auto", decode_linear: str = "auto"):
        if (kv_cache not in KV_CACHES or sampler not in SAMPLERS or prefill not in PREFILLS
                or decode_linear not in DECODE_LINEARS):
            raise ValueError(f"HFEngine: kv_cache must be one of {KV_CACHES}, sampler one of {SAMPLERS}, "
                             f"prefill one of {PREFILLS}, decode_linear one of {DECODE_LINEARS}")
        self.source = model
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = batch_size
        self.kv_cache = kv_cache
        self.share_prompt_prefill = share_prompt_prefill
        self.sampler = sampler
        self.prefill = prefill
        self.decode_linear = decode_linear
        model_dtype = next(model.parameters()).dtype
        if dtype is not None and dtype != model_dtype:
            self.model = frozen_copy(model, dtype)
        else:
            self.model = model

    def sync_weights(self) -> None:
        """Copy the trainer's current weights (LoRA merged layer by layer, no copy of the model) into the
        generation copy (no-op when shared)."""
        if self.model is self.source:
            return
        import torch

        target = self.model.state_dict()
        with torch.no_grad():
            for name, tensor in merged_weights(self.source):
                target[name].copy_(tensor)

    def per_prompt_prefill(self, width: int) -> bool:
        """Whether a batch of prompts up to `width` tokens is prefilled prompt by prompt (``prefill``). ``auto``
        does so on CPU for long prompts only: on the quick start's rollout prompts (400-650 tokens, little
        padding) one forward per prompt gained nothing (0.95x and 1.04x in two runs), on SEED's ~1,870-token
        analysis prompts the prefill was 1.28x faster (docs/performance.md, "Per-prompt prefill")."""
        if self.prefill != "auto":
            return self.prefill == "per_prompt"
        return _device_type(self.device) == "cpu" and width >= PER_PROMPT_MIN_WIDTH

    def weight_major_decode(self) -> bool:
        """Whether decode steps compute their linear layers weight-major (``decode_linear``; ``auto``: on
        CPU, where the few-row ``x @ Wᵀ`` is slow; GPU BLAS libraries handle both forms alike)."""
        if self.decode_linear != "auto":
            return self.decode_linear == "weight_major"
        return _device_type(self.device) == "cpu"

    def generate(self, prompts: list[PromptLike], params: SamplingParams, progress: Any = None) -> list[Generation]:
        """One `Generation` per prompt, in the caller's order. `progress` (a tqdm bar, optional) counts decode
        steps: ``max_new_tokens`` per batch, a batch that stops early jumping to its end."""
        # Sort by length so each batch pads little (and by ids, so identical prompts sit together and can
        # share their prefill); restore the caller's order at the end.
        order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), list(prompts[i])))
        results: list[Generation | None] = [None] * len(prompts)
        batches = range(0, len(order), self.batch_size)
        if progress is not None:
            progress.reset(total=len(batches) * params.max_new_tokens)
        for number, start in enumerate(batches):
            chunk = order[start : start + self.batch_size]
            for index, generation in zip(chunk, self._generate_batch([prompts[i] for i in chunk], params, progress)):
                results[index] = generation
            if progress is not None:
                progress.update((number + 1) * params.max_new_tokens - progress.n)
        return results  # type: ignore[return-value]

    def _generate_batch(self, prompts: list[PromptLike], params: SamplingParams,
                        progress: Any = None) -> list[Generation]:
        import torch
        from transformers import LogitsProcessorList

        tok = self.tokenizer
        pad_id = tok.pad_token_id
        stop_ids = eos_ids(self.model, tok)
        input_ids, attention = left_padded(prompts, pad_id)
        width = input_ids.shape[1]
        kwargs: dict[str, Any] = dict(
            max_new_tokens=params.max_new_tokens,
            pad_token_id=pad_id,
            eos_token_id=stop_ids,
            return_dict_in_generate=True,
        )
        temperature = 1.0 if params.greedy else params.temperature
        never = placeholder_ids(self.model) if is_vision_model(self.model) else []
        if never:  # pixels, grids and mm_token_type_ids ride on the prompts (seedbench.models.vision)
            kwargs.update({k: v.to(self.device) for k, v in vision_inputs(prompts, input_ids, width, never[0]).items()})
            kwargs["repetition_penalty"] = 1.0  # Qwen2.5-VL's generation_config sets 1.05: not the scored distribution
        fused = self.sampler == "fused" and not params.greedy and params.top_p >= 1.0
        recorder = _LogprobRecorder(temperature, never, sample=fused, on_step=None if progress is None else progress.update)
        kwargs["logits_processor"] = LogitsProcessorList([recorder])
        if params.greedy or fused:  # fused: the recorder samples, generate picks its one-hot choice
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)
        if params.stop:
            kwargs.update(stopping_criteria=_stop_criteria(tok, params.stop, width))
        text_only = not never
        input_ids, attention = input_ids.to(self.device), attention.to(self.device)
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            if text_only and self.kv_cache == "static":
                kwargs.update(cache_implementation="static", disable_compile=True)
            per_prompt = self.per_prompt_prefill(width)
            if text_only and (self.share_prompt_prefill or per_prompt):
                cache = shared_prefill(self.model, input_ids, attention, self.kv_cache, width + params.max_new_tokens,
                                       share=self.share_prompt_prefill, per_prompt=per_prompt)
                if cache is not None:
                    kwargs.pop("cache_implementation", None)
                    kwargs[cache_argument(self.model)] = cache
            with weight_major_linears(self.model) if self.weight_major_decode() else contextlib.nullcontext():
                out = self.model.generate(input_ids=input_ids, attention_mask=attention, **kwargs)
        if was_training:
            self.model.train()
        sequences = out.sequences[:, width:]
        token_logp = recorder.finish(sequences).cpu()
        sequences = sequences.cpu()
        generations = []
        for row in range(len(prompts)):
            ids = sequences[row].tolist()
            length, reason = response_length(ids, stop_ids, pad_id, tok, params.stop)
            kept = ids[:length]
            generations.append(Generation(token_ids=kept, logprobs=token_logp[row, :length].tolist(),
                                          text=tok.decode(kept, skip_special_tokens=True), finish_reason=reason))
        return generations


class _LogprobRecorder:
    """Records the log-prob of each sampled token while `generate` runs, keeping one [B, V] distribution
    at a time. (`output_logits=True` keeps every step's [B, V] logits: gigabytes for long analyses with a
    49k vocabulary.) Custom processors run before transformers' temperature/top-p warpers, so the scores
    seen here are the raw logits; we apply the temperature ourselves. `never` (a vision model's
    placeholder ids) are removed from the distribution here, before sampling and recording, exactly as
    the scoring forward removes them."""

    def __init__(self, temperature: float, never: list[int] | None = None, sample: bool = False,
                 on_step: Any = None):
        self.on_step = on_step  # called with 1 after each decode step (a progress bar's update)
        self.temperature = temperature
        self.never = list(never or [])
        self.sample = sample
        self.previous = None
        self.logprobs: list = []

    def __call__(self, input_ids, scores):
        import torch

        if self.never:
            scores = scores.index_fill(-1, torch.tensor(self.never, device=scores.device), float("-inf"))
        if self.previous is not None:
            self.logprobs.append(self.previous.gather(1, input_ids[:, -1:]).squeeze(1))
        self.previous = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        if self.on_step is not None:
            self.on_step(1)
        if not self.sample:
            return scores
        # Sample here from the distribution just recorded; hand generate a one-hot (0 at the token, -inf
        # elsewhere) that its greedy step picks. multinomial needs no normalised input, exp(log p) is one.
        token = torch.multinomial(self.previous.exp(), 1)
        return torch.full_like(scores, float("-inf")).scatter_(1, token, 0.0)

    def finish(self, sequences):
        """[B, T] log-probs of the generated tokens (the last step's token is read here)."""
        import torch

        if self.previous is not None and len(self.logprobs) < sequences.shape[1]:
            self.logprobs.append(self.previous.gather(1, sequences[:, len(self.logprobs)].unsqueeze(1)).squeeze(1))
        if not self.logprobs:
            return torch.zeros(sequences.shape, dtype=torch.float32)
        return torch.stack(self.logprobs, dim=1)


def left_padded(prompts: list[PromptLike], pad_id: int) -> tuple[Any, Any]:
    """Token ids [B, width] with each prompt right-aligned after `pad_id`s, and the matching 0/1 mask."""
    import torch

    width = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, ids in enumerate(prompts):
        input_ids[row, width - len(ids) :] = torch.tensor(list(ids), dtype=torch.long)
        attention[row, width - len(ids) :] = 1
    return input_ids, attention


def _device_type(device: Any) -> str:
    return getattr(device, "type", None) or str(device).split(":")[0]


def shared_prefill(model: Any, input_ids: Any, attention: Any, kv_cache: str, max_cache_len: int, *,
                   share: bool = True, per_prompt: bool = False) -> Any:
    """The KV cache of a left-padded batch's prompts but their last token (which `generate` then runs,
    giving the first new token's logits), or None to let `generate` prefill as usual.

    ``share``: each distinct row is prefilled once and its cache copied to the identical rows (identical
    rows have identical padding, so their keys and values are equal). ``per_prompt``: each distinct row is
    prefilled alone without its padding (`_per_prompt_cache`); else the distinct rows go through one padded
    forward, with positions computed from the padding mask exactly as `generate` computes them."""
    import torch

    if input_ids.shape[1] < 2 or not (share or per_prompt):
        return None
    if share:
        distinct, inverse = torch.unique(input_ids, dim=0, return_inverse=True)
    else:
        distinct, inverse = input_ids, torch.arange(input_ids.shape[0], device=input_ids.device)
    if distinct.shape[0] == input_ids.shape[0] and not per_prompt:
        return None
    first = torch.zeros(distinct.shape[0], dtype=torch.long, device=input_ids.device)
    first.scatter_(0, inverse, torch.arange(input_ids.shape[0], device=input_ids.device))  # a row of each
    ids, mask = input_ids[first, :-1], attention[first, :-1]
    cache = empty_cache(model, kv_cache, max_cache_len)
    if per_prompt:
        if not _per_prompt_cache(model, ids, mask, cache):
            return None
    else:
        padded_prefill(model, ids, mask, cache)
    if share:  # expand (and restore the order: `unique` sorts): row i of the batch takes distinct row inverse[i]
        for layer in cache.layers:
            layer.keys = layer.keys.index_select(0, inverse)
            layer.values = layer.values.index_select(0, inverse)
            if hasattr(layer, "batch_size"):
                layer.batch_size = input_ids.shape[0]
    return cache


def empty_cache(model: Any, kv_cache: str, max_cache_len: int) -> Any:
    """A new KV cache of the engine's kind: static (allocated at `max_cache_len` on first use) or dynamic."""
    from transformers import DynamicCache, StaticCache

    return StaticCache(config=model.config, max_cache_len=max_cache_len) if kv_cache == "static" else DynamicCache()


def padded_prefill(model: Any, ids: Any, mask: Any, cache: Any) -> None:
    """One forward of the left-padded `ids` into `cache`, positions from the padding mask exactly as
    `generate` computes them."""
    positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1,
          **{cache_argument(model): cache})


def _per_prompt_cache(model: Any, ids: Any, mask: Any, cache: Any) -> bool:
    """Fill `cache` with the left-padded batch `ids`' keys and values, each row prefilled alone on its own
    tokens (batch 1, no mask: causal attention over the prompt only), then placed right-aligned. False
    (cache untouched) for caches whose layers are not plain full-attention layers (sliding windows).

    The padded columns hold ones: the attention mask hides them whatever they hold, and older transformers
    versions count a static cache's filled length by its non-zero columns."""
    import torch
    from transformers import DynamicCache

    if any(getattr(layer, "is_sliding", False) for layer in getattr(cache, "layers", [])):
        return False
    width = ids.shape[1]
    own_caches = []
    for row in range(ids.shape[0]):
        length = int(mask[row].sum())
        own = DynamicCache()
        if length:
            model(input_ids=ids[row : row + 1, width - length :], use_cache=True, logits_to_keep=1,
                  **{cache_argument(model): own})
        own_caches.append((length, own))
    shaped = next((own for length, own in own_caches if length), None)
    if shaped is None:
        return False
    positions = {"cache_position": torch.arange(width, device=ids.device)}
    for index, template in enumerate(shaped.layers):
        keys = template.keys.new_ones((ids.shape[0], *template.keys.shape[1:2], width, template.keys.shape[3]))
        values = template.values.new_ones((ids.shape[0], *template.values.shape[1:2], width,
                                           template.values.shape[3]))
        for row, (length, own) in enumerate(own_caches):
            if length:
                keys[row, :, width - length :] = own.layers[index].keys[0]
                values[row, :, width - length :] = own.layers[index].values[0]
        cache.update(keys, values, index, positions)
    return True


def cache_argument(model: Any) -> str:
    """The name a model's forward takes its KV cache by: ``cache`` (transformers ≥ 5.2x, which deprecates the
    old name) or ``past_key_values`` (earlier versions, e.g. the 5.17 of the GPU check's machine)."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _stop_criteria(tokenizer: Any, stop: list[str], prompt_width: int):
    """Per-sequence stop on strings, checked on the decoded tail of the generated tokens (transformers'
    own `stop_strings` needs a BPE-style vocabulary and fails on word-level tokenizers)."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    tail = max(len(s) for s in stop) + 8

    class StopOnStrings(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            generated = input_ids[:, prompt_width:]
            texts = tokenizer.batch_decode(generated[:, -tail:], skip_special_tokens=False)
            return torch.tensor([any(s in text for s in stop) for text in texts], device=input_ids.device)

    return StoppingCriteriaList([StopOnStrings()])
