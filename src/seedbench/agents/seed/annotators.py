"""Annotators for SEED stage 1 (docs/method.md §3.2): whoever writes the reference analyses the policy is
fine-tuned on. Never hard-wired; chosen with ``seedbench sft-analyzer --annotator SPEC``:

``openai:<model>``
    An OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, SGLang, llama.cpp server, ...):
    ``--base-url`` (or ``$SEEDBENCH_ANNOTATOR_BASE_URL``), the model name, and the API key read from the
    environment variable named by ``--api-key-env`` (default ``OPENAI_API_KEY``; empty name = no key, for
    local servers). Plain `urllib`, no client library.
``hf:<path or hub id>`` (or just an existing local path)
    A local Hugging Face causal LM, answering greedily through seedbench's own generation engine.
``hindsight``
    **Not a model.** Rule-based analyses written from the finished trajectory alone (task, observations,
    actions, rewards, outcome) plus the env class's optional ``hindsight_facts`` hook
    (`seedbench.agents.seed.hindsight`, `seedbench.envs.hindsight`): the decisive move, the fatal one,
    invalid answers, loops, steps that changed nothing. It never builds an env, so it cannot read the
    expert plan or any hidden state. For CPU runs of the pipeline with skills that are real hindsight.
``oracle`` (alias ``scripted``, which prints a warning)
    **Leaks the answer: hint distillation, not hindsight analysis.** Skills copy hidden env data: the
    expert plan from the task's start (`env.expert_plan()`, Sokoban and ALFWorld) or the answer the env
    states outright (`env.oracle_skill`, the choice env's rewarded side); only envs with neither fall back to
    the trajectory's outcome and actions. A policy fine-tuned on these answers learns to repeat a hint it
    will not have at test time; use it only as an upper-bound control or a pipeline smoke test.

An annotator turns `AnnotationRequest` s into raw answer texts; the caller parses them with the same
lenient parser stage 2 uses and keeps the parseable ones.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from seedbench.agents.seed.hindsight import HindsightAnnotator
from seedbench.config.schema import ModelConfig
from seedbench.engines.base import SamplingParams
from seedbench.engines.hf import HFEngine
from seedbench.envs.text_env import TextEnv
from seedbench.models.policy import load_policy
from seedbench.progress import progress_bar
from seedbench.rollout.prompting import render_prompt

from seedbench.config.errors import ConfigError

DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "SEEDBENCH_ANNOTATOR_BASE_URL"
ORACLE_LABEL = ("oracle (LEAKS THE ANSWER: hint distillation, skills copy the env's expert plan or rewarded "
                "answer; not hindsight analysis, not a model)")
SCRIPTED_ALIAS_WARNING = ("seedbench: warning: --annotator scripted is an alias of oracle, which leaks the answer (its skills "
                          "copy the expert plan or rewarded answer); use --annotator hindsight for analyses of the "
                          "trajectory alone")
OFFLINE_HINT = ("no annotator model is reachable offline: pass --annotator hf:<local model directory>, or "
                "--annotator hindsight for rule-based analyses of the trajectories (labelled as such)")


RULE_ANNOTATORS = ("hindsight", "oracle", "scripted")
"""The rule-based annotators; the others are ``hf:<model>``, ``openai:<model>`` or a local model folder."""


def check_annotator_spec(spec: str) -> None:
    """A run's ``analyzer_sft.annotator`` names an annotator: checked when the run config is validated
    (`seedbench.config.resolve.ANNOTATOR_CHECK`, for every agent), before a warm start is built in front
    of stage 1. Empty = no stage 1."""
    if spec and spec not in RULE_ANNOTATORS and not spec.startswith(("hf:", "openai:")) and not Path(spec).exists():
        raise ConfigError(f"analyzer_sft.annotator: unknown {spec!r}; use one of {', '.join(RULE_ANNOTATORS)}, "
                          "hf:<model path or hub id>, openai:<model> or a local model folder (empty = no stage 1)")


class AnnotatorUnavailable(RuntimeError):
    """The chosen annotator cannot be used; the message says why and what to do (one line)."""


@dataclass
class AnnotationRequest:
    content: str
    """The analyzer prompt (docs/method.md §4) with the true outcome."""
    trajectory: Any
    """The `seedbench.rollout.types.Trajectory` (the rule-based annotators read it directly)."""


class Annotator(Protocol):
    kind: str
    label: str

    def check(self) -> None: ...

    def annotate(self, requests: list[AnnotationRequest]) -> list[str]: ...


# ----------------------------------------------------------------------------------------------------
# oracle (leaks the answer)


class OracleAnnotator:
    """Rule-based analyses from hidden env data (see module docstring: it leaks the answer). `make_env`
    builds an env of the run's kind; it is reset to each trajectory's task, so the answer it states
    (`oracle_skill`) and the expert plan it reads are those of that episode's task (ImageChoice's rewarded
    side changes with the task)."""

    kind = "oracle"
    label = ORACLE_LABEL

    def __init__(self, make_env: Callable[[], TextEnv]):
        self.env = make_env()
        self.states_answer = type(self.env).oracle_skill is not TextEnv.oracle_skill

    def check(self) -> None:
        return None

    def annotate(self, requests: list[AnnotationRequest]) -> list[str]:
        return [json.dumps(self.analyse(r.trajectory), ensure_ascii=False) for r in requests]

    def analyse(self, traj: Any) -> dict[str, str]:
        actions = [s.action if s.action_valid else "(invalid)" for s in traj.steps]
        invalid = sum(not s.action_valid for s in traj.steps)
        summary = (f"The agent {'solved' if traj.won else 'did not solve'} the task in {len(traj.steps)} step(s) "
                   f"with {invalid} invalid action(s); its actions were: {', '.join(actions) or 'none'}.")
        if self.states_answer or self.env.has_expert():  # both read the episode's task, not the last one's
            self.env.reset(seed=traj.task.seed, options={"split": traj.task.split})
        stated = self.env.oracle_skill(traj.won) if self.states_answer else None
        plan = self.env.expert_plan() if stated is None and self.env.has_expert() else None
        fmt = "Answer every step with exactly one admissible action inside <action></action>."
        if stated is not None:
            skill = stated
        elif plan:
            order = ", ".join(plan)
            if traj.won:
                skill = f"Plan the pushes before moving, then play the moves in this order: {order}. {fmt}"
            else:
                skill = f"Avoid {_mistake(traj, invalid)}; warning sign: {_warning(traj, invalid)}. From the start, play: {order}."
        elif traj.won:
            valid = [s.action for s in traj.steps if s.action_valid]
            skill = f"Repeat the workflow that worked: {', '.join(valid) or 'the same actions'}, in this order. {fmt}"
        else:
            skill = f"Avoid {_mistake(traj, invalid)}; warning sign: {_warning(traj, invalid)}. {fmt}"
        return {"episode_summary": summary, "episode_skill": skill}


def _mistake(traj: Any, invalid: int) -> str:
    if invalid:
        return "answers without a valid <action> tag"
    observations = [s.observation for s in traj.steps]
    if len(set(observations)) < len(observations):
        return "moves that do not change the state"
    return "running out of steps before finishing the task"


def _warning(traj: Any, invalid: int) -> str:
    if invalid:
        return "a response that does not end in <action>...</action>"
    observations = [s.observation for s in traj.steps]
    if len(set(observations)) < len(observations):
        return "the same observation twice in a row"
    return "half of the step budget used without progress"


# ----------------------------------------------------------------------------------------------------
# local Hugging Face model


class HFAnnotator:
    kind = "hf"

    def __init__(self, name: str, *, device: str = "auto", dtype: str = "auto", max_new_tokens: int = 512,
                 batch_size: int = 8):
        self.name, self.device, self.dtype = name, device, dtype
        self.max_new_tokens, self.batch_size = max_new_tokens, batch_size
        self.label = f"local HF model {name}"
        self._policy = self._engine = None

    def check(self) -> None:
        if self._engine is not None:
            return
        if self.name.startswith(("/", "./", "../", "~")) and not Path(self.name).expanduser().exists():
            raise AnnotatorUnavailable(f"annotator model directory {self.name} does not exist; {OFFLINE_HINT}")
        try:
            policy = load_policy(ModelConfig(name=self.name, device=self.device, dtype=self.dtype), need_reference=False)
        except (OSError, ValueError, ConfigError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise AnnotatorUnavailable(f"cannot load the annotator model {self.name!r} ({first}); {OFFLINE_HINT}") from err
        self._policy = policy
        self._engine = HFEngine(policy.model, policy.tokenizer, policy.device, batch_size=self.batch_size,
                                dtype=policy.compute_dtype)

    def annotate(self, requests: list[AnnotationRequest]) -> list[str]:
        self.check()
        prompts = [render_prompt(self._policy.tokenizer, r.content) for r in requests]
        params = SamplingParams(max_new_tokens=self.max_new_tokens, greedy=True, stop=[])
        with progress_bar(total=len(prompts) * self.max_new_tokens, desc="annotating", unit="token") as bar:
            return [g.text for g in self._engine.generate(prompts, params, progress=bar)]


# ----------------------------------------------------------------------------------------------------
# OpenAI-compatible endpoint


class EndpointAnnotator:
    kind = "openai"

    def __init__(self, model: str, base_url: str, *, api_key_env: str = DEFAULT_API_KEY_ENV, max_tokens: int = 1024,
                 timeout_s: float = 120.0, retries: int = 3, temperature: float = 0.0):
        self.model, self.base_url = model, base_url.rstrip("/")
        self.api_key_env, self.max_tokens = api_key_env, max_tokens
        self.timeout_s, self.retries, self.temperature = timeout_s, retries, temperature
        self.label = f"OpenAI-compatible endpoint {self.base_url} model {model}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key:
                raise AnnotatorUnavailable(f"the annotator endpoint needs an API key in ${self.api_key_env} "
                                           f"(or pass --api-key-env '' for a server without keys)")
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def check(self) -> None:
        """Fail before the (long) rollout when the endpoint cannot be reached: any HTTP answer from
        ``/models`` counts as reachable, a connection error does not."""
        request = urllib.request.Request(f"{self.base_url}/models", headers=self._headers(), method="GET")
        try:
            with urllib.request.urlopen(request, timeout=min(self.timeout_s, 15.0)):
                pass
        except urllib.error.HTTPError:
            return
        except (urllib.error.URLError, OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise AnnotatorUnavailable(f"annotator endpoint {self.base_url} is unreachable ({reason}); {OFFLINE_HINT}") from err

    def complete(self, content: str) -> str:
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": content}],
                           "temperature": self.temperature, "max_tokens": self.max_tokens}).encode()
        last: Exception | None = None
        for attempt in range(self.retries):
            request = urllib.request.Request(f"{self.base_url}/chat/completions", data=body, headers=self._headers(),
                                             method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                return str(payload["choices"][0]["message"].get("content") or "")
            except urllib.error.HTTPError as err:
                last = err
                if err.code not in (408, 429, 500, 502, 503, 504):
                    detail = err.read().decode("utf-8", "replace")[:200]
                    raise AnnotatorUnavailable(f"annotator endpoint answered HTTP {err.code}: {detail}") from err
            except (urllib.error.URLError, OSError, KeyError, IndexError, json.JSONDecodeError) as err:
                last = err
            time.sleep(2.0 ** attempt)
        raise AnnotatorUnavailable(f"annotator endpoint {self.base_url} failed {self.retries} times ({last})")

    def annotate(self, requests: list[AnnotationRequest]) -> list[str]:
        return [self.complete(r.content) for r in requests]


# ----------------------------------------------------------------------------------------------------


def make_annotator(spec: str, *, make_env: Callable[[], Any], env_cls: type | None = None, base_url: str | None = None,
                   api_key_env: str = DEFAULT_API_KEY_ENV, device: str = "auto", dtype: str = "auto",
                   max_new_tokens: int = 512) -> Annotator:
    """Build the annotator named by `spec` (see module docstring). `make_env` builds an env (only
    ``oracle`` calls it); `env_cls` is the env's class, whose ``hindsight_facts`` hook ``hindsight`` reads."""
    if spec == "hindsight":
        return HindsightAnnotator(env_cls)
    if spec == "scripted":
        print(SCRIPTED_ALIAS_WARNING, file=sys.stderr)
        spec = "oracle"
    if spec == "oracle":
        return OracleAnnotator(make_env)
    if spec.startswith("openai:"):
        model = spec.split(":", 1)[1]
        url = base_url or os.environ.get(BASE_URL_ENV, "")
        if not model or not url:
            raise AnnotatorUnavailable(f"--annotator openai:<model> needs a model name and --base-url (or ${BASE_URL_ENV})")
        return EndpointAnnotator(model, url, api_key_env=api_key_env, max_tokens=max_new_tokens)
    if spec.startswith("hf:") or Path(spec).exists():
        name = spec[3:] if spec.startswith("hf:") else spec
        return HFAnnotator(name, device=device, dtype=dtype, max_new_tokens=max_new_tokens)
    raise AnnotatorUnavailable(f"unknown annotator {spec!r}; use openai:<model> (with --base-url), hf:<model path or "
                               f"hub id>, a local model directory, hindsight (rule-based, from the trajectory) or oracle "
                               f"(rule-based, leaks the answer)")
