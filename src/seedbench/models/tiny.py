"""A tiny randomly initialised causal LM with a word-level tokenizer, built locally in a second.

Used by tests, the CPU learning checks and experiment smoke runs (``--model tiny``): no download, no
cache. The vocabulary covers the words of seedbench's prompt template and the simple envs' actions;
any other word becomes ``<unk>``. Its chat template is minimal but real, so the same prompt builder
and engines run unchanged.
"""

from __future__ import annotations

import re

TINY_NAME = "tiny"
SPECIAL_TOKENS = ["<pad>", "<unk>", "<eos>", "<|user|>", "<|assistant|>", "<|system|>"]
WORDS = (
    "left right up down yes no skill use the following learned from a previous attempt at this episode to act in "
    "episode-level your task is choose or answer with now it's turn take an action you should first reason "
    "think action < > </ / : ; , . ' [ ] - ( ) { } \" = step observation current admissible actions are "
    "summary success failure true false valid response go push box target wall player room 0 1 2 3 4 5 6 7 8 9"
)
CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    from transformers import PreTrainedTokenizerFast

    words = list(dict.fromkeys(SPECIAL_TOKENS + WORDS.split()))
    vocab = {word: index for index, word in enumerate(words)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(re.escape("<|") + r"\w+" + re.escape("|>"), "isolated"),
         pre_tokenizers.Whitespace()]
    )
    backend.decoder = decoders.WordPiece(prefix="##")  # joins tokens with spaces
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="<eos>",
        additional_special_tokens=["<|user|>", "<|assistant|>", "<|system|>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_model(tokenizer=None, *, hidden_size: int = 64, num_layers: int = 2, seed: int = 0):
    """A LlamaForCausalLM with `hidden_size` and `num_layers`, randomly initialised from `seed`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tokenizer or tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model
