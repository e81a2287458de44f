"""Generation engines: token ids in, sampled token ids and their log-probs out.

Token-in/token-out: the trainer trains on exactly the ids an engine sampled, never on re-tokenized text
(re-tokenizing decoded text can change the ids and silently corrupt PPO ratios).

`HFEngine` batches `transformers` ``generate`` (left padding, KV cache). The trainer keeps fp32 master
weights (bf16 weights cannot absorb 1e-6-sized AdamW steps); when the compute dtype is lower (bf16 by
default), the engine generates from its own low-precision copy, refreshed by `sync_weights` after every
update, like a separate inference engine would be. Other engines (vLLM) implement the same interface.
"""

from __future__ import annotations

from typing import Any

from seedbench.engines.base import Generation, GenerationEngine, SamplingParams, eos_ids, response_length
from seedbench.models.vision import is_vision_model, placeholder_ids, vision_inputs
from seedbench.models.weights import frozen_copy, merged_weights


class HFEngine:
    """Batched `generate` over the policy's own model (shared weights, so `sync_weights` is a no-op)."""

    name = "hf"

    def __init__(self, model: Any, tokenizer: Any, device: Any, batch_size: int = 32, dtype: Any = None):
        self.source = model
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = batch_size
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

    def generate(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        # Sort by length so each batch pads little; restore the caller's order at the end.
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        results: list[Generation | None] = [None] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            for index, generation in zip(chunk, self._generate_batch([prompts[i] for i in chunk], params)):
                results[index] = generation
        return results  # type: ignore[return-value]

    def _generate_batch(self, prompts: list[list[int]], params: SamplingParams) -> list[Generation]:
        import torch
        from transformers import LogitsProcessorList

        tok = self.tokenizer
        pad_id = tok.pad_token_id
        stop_ids = eos_ids(self.model, tok)
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, ids in enumerate(prompts):
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
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
        recorder = _LogprobRecorder(temperature, never)
        kwargs["logits_processor"] = LogitsProcessorList([recorder])
        if params.greedy:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(do_sample=True, temperature=params.temperature, top_p=params.top_p, top_k=0)
        if params.stop:
            kwargs.update(stopping_criteria=_stop_criteria(tok, params.stop, width))
        was_training = self.model.training
        self.model.eval()
        with torch.no_grad():
            out = self.model.generate(input_ids=input_ids.to(self.device), attention_mask=attention.to(self.device), **kwargs)
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

    def __init__(self, temperature: float, never: list[int] | None = None):
        self.temperature = temperature
        self.never = list(never or [])
        self.previous = None
        self.logprobs: list = []

    def __call__(self, input_ids, scores):
        import torch

        if self.never:
            scores = scores.index_fill(-1, torch.tensor(self.never, device=scores.device), float("-inf"))
        if self.previous is not None:
            self.logprobs.append(self.previous.gather(1, input_ids[:, -1:]).squeeze(1))
        self.previous = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def finish(self, sequences):
        """[B, T] log-probs of the generated tokens (the last step's token is read here)."""
        import torch

        if self.previous is not None and len(self.logprobs) < sequences.shape[1]:
            self.logprobs.append(self.previous.gather(1, sequences[:, len(self.logprobs)].unsqueeze(1)).squeeze(1))
        if not self.logprobs:
            return torch.zeros(sequences.shape, dtype=torch.float32)
        return torch.stack(self.logprobs, dim=1)


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
