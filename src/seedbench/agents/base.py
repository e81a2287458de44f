"""The agent contract: everything the trainer calls on an agent, and everything it hands to one.

An agent turns finished trajectories into training samples (`Agent.prepare`) and a mini-batch of
response-token tensors into a loss (`Agent.loss`); the trainer (`seedbench.training.trainer`) owns the
rest: rollout, old and reference log-probs, mini-batching, gradient accumulation, optimizer, run
directory. One update:

1. rollout → trajectories (`seedbench.rollout.types.Trajectory`) and one reward per trajectory;
2. ``agent.prepare(trajectories, rewards, iteration)`` → `PreparedUpdate`: one `TrainSample` per
   trained step (prompt ids, response ids, advantage, optional per-token extras), metrics, and
   ``update_info`` (numbers that hold for the whole update);
3. the trainer scores the samples with the pre-update weights (``old_logp``; ``ref_logp`` when
   ``Agent.needs_reference(config)``), then for every micro-batch builds a `MiniBatch` and calls
   ``agent.loss(minibatch)`` → (loss summed with ``minibatch.loss_weight``, token-summed metrics); it
   divides both by the mini-batch's response-token count (with the weights: the ``optim.loss_agg_mode``
   aggregation) and steps the optimizer.

Agents keep no state between `prepare` and `loss`: what the loss needs beyond the per-sample fields
travels in ``TrainSample.extras`` (per token) or ``PreparedUpdate.update_info`` (per update), which the
trainer puts in every `MiniBatch`. docs/adding_an_agent.md walks through writing one.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from seedbench.config.schema import NonNegative  # field ranges, checked when the config is parsed
from seedbench.prompt import PromptLike

if TYPE_CHECKING:  # the contract itself needs neither torch nor the trainer at import time
    import torch

    from seedbench.config.schema import RunConfig
    from seedbench.engines.base import GenerationEngine, SamplingParams
    from seedbench.envs.text_env import TextEnv
    from seedbench.models.policy import Policy
    from seedbench.rollout.types import Trajectory
    from seedbench.training.rundir import RunDir


@dataclass
class AgentConfig:
    """Fields every agent has (the trainer reads them); an agent's own ``Config`` subclasses this.

    Values come from the registry entry's overrides, then ``algo.*`` in the run config; an unknown
    ``algo.`` key is an error naming the valid ones."""

    kl_coef: NonNegative = 0.0
    """β_KL of a KL(π‖π_ref) term to the frozen initial weights. > 0 makes the trainer load a reference
    model and fill `MiniBatch.ref_logp` (when `Agent.needs_reference` says so)."""
    entropy_coef: NonNegative = 0.0
    """Weight of an entropy bonus. > 0 makes the trainer compute per-token entropies (`MiniBatch.entropy`),
    which costs a log-softmax over the vocabulary per token."""
    invalid_penalty: NonNegative | None = None
    """Subtracted from an invalid step's score; None = the env's `invalid_action_penalty`."""


@dataclass
class TrainSample:
    """One env step ready for the update. Per-token extras (e.g. SEED's teacher log-probs) live in
    `extras`, aligned with `response_ids`; every sample of an update has the same extras keys."""

    prompt_ids: PromptLike
    """The step's prompt as it was sampled from (a `seedbench.prompt.Prompt` when it shows images)."""
    response_ids: list[int]
    advantage: float
    traj_index: int
    """Index of the sample's trajectory in the list `Agent.prepare` received."""
    extras: dict[str, list[float]] = field(default_factory=dict)


@dataclass
class PreparedUpdate:
    """What `Agent.prepare` returns: the samples to train on, metrics to log for this iteration, and
    numbers every `loss` call of this update may need (copied into `MiniBatch.update_info`)."""

    samples: list[TrainSample]
    metrics: dict[str, float | None] = field(default_factory=dict)
    update_info: dict[str, float] = field(default_factory=dict)


@dataclass
class MiniBatch:
    """Tensors for one forward pass, padded to [B, L] over response tokens (``mask`` is 1 on real ones)."""

    logp: torch.Tensor
    """Log-probs of the response tokens under the current weights, with gradient."""
    old_logp: torch.Tensor
    """The same under the pre-update weights (PPO's π_old), no gradient."""
    mask: torch.Tensor
    advantages: torch.Tensor
    """[B]: `TrainSample.advantage` of each row."""
    ref_logp: torch.Tensor | None = None
    """Under the frozen reference model; None unless `Agent.needs_reference`."""
    entropy: torch.Tensor | None = None
    """Per-token entropy of the current policy; None unless ``config.entropy_coef > 0``."""
    extras: dict[str, torch.Tensor] = field(default_factory=dict)
    """`TrainSample.extras`, padded to [B, L]."""
    update_info: dict[str, float] = field(default_factory=dict)
    """`PreparedUpdate.update_info` of this update (the same in every mini-batch)."""
    minibatch_tokens: int = 0
    """Response tokens of the whole optimizer mini-batch this micro-batch belongs to: the trainer divides
    every `loss` sum by it (a token mean across gradient accumulation). 0 = this micro-batch alone is the
    mini-batch (its own token count)."""
    micro_batches: int = 1
    """Micro-batches (forward passes) in that mini-batch; with `minibatch_tokens` it lets a term use
    another normaliser (SEED's reference OPD mean over its active tokens per micro-batch)."""
    loss_agg_mode: str = "token-mean"
    """``optim.loss_agg_mode``: how `loss_weight` aggregates the per-token losses (`loss_token_weights`)."""
    engine_logp: torch.Tensor | None = None
    """The rollout engine's sampled log-probs of the response tokens (NaN rows: unknown), only when
    ``optim.rollout_is`` is on."""
    rollout_is: str = "off"
    """``optim.rollout_is``: ``off``, ``token`` or ``sequence`` truncated importance sampling."""
    rollout_is_cap: float = 2.0
    """``optim.rollout_is_cap``: the truncation C of the importance ratio."""

    def __post_init__(self) -> None:
        if not self.minibatch_tokens:
            self.minibatch_tokens = int(self.mask.sum())

    @property
    def loss_weight(self) -> torch.Tensor:
        """Per-token weights [B, L] (0 on padding) the loss terms sum with instead of ``mask``, so the
        trainer's division by `minibatch_tokens` gives the `loss_agg_mode` aggregation."""
        from seedbench.agents.losses import loss_token_weights

        return loss_token_weights(self.mask, self.loss_agg_mode, self.minibatch_tokens, self.micro_batches)


@dataclass
class AgentContext:
    """What an agent may use: the policy, the engine, an env instance (for its attributes and
    `parse_action` only), the run directory and a scoring helper. Every member is named and typed; an agent
    that needs something else builds it from these (SEED's frozen analyzer engine from `policy` and `config`)."""

    policy: Policy
    """The trained model, its tokenizer, device, frozen reference and checksum (`seedbench.models.policy`)."""
    engine: GenerationEngine
    """The rollout's engine, for extra generations (`seedbench.engines.base`; vLLM's is also a
    `seedbench.engines.base.StreamingEngine`)."""
    env: TextEnv
    """One env instance of the run's env (its attributes, `parse_action` and hooks)."""
    run_dir: RunDir
    config: RunConfig
    sampling: SamplingParams | None
    """The rollout's sampling; None where nothing samples (``seedbench eval <run>`` of a saved agent)."""

    @property
    def score_temperature(self) -> float:
        """Temperature of the update's log-probs: the rollout's sampling temperature
        (``optim.score_temperature=sampling``, reference code) or 1 (``one``); greedy rollouts score at 1."""
        temperature = self.sampling.temperature if self.sampling is not None else 1.0
        if self.config.optim.score_temperature == "one" or temperature <= 0:
            return 1.0
        return temperature

    def score(self, prompts: list[list[int]], responses: list[list[int]], model: Any = None,
              autocast_factory: Any = None) -> list[list[float]]:
        """Log-probs of `responses` under `prompts` with the current weights (or `model`), no grad, at
        `score_temperature`, computed as the update's loss forwards compute (`scoring_path`), or under
        `autocast_factory`'s region on `model` (default: the master weights) when one is given."""
        from seedbench.models.scoring import score_responses

        p, optim = self.policy, self.config.optim
        if autocast_factory is None:
            model, autocast_factory = self.scoring_path(model)
        model = model or p.model
        return score_responses(model, prompts, responses, p.tokenizer.pad_token_id, p.device,
                               optim.log_prob_micro_batch_size or optim.micro_batch_size,
                               autocast_factory=autocast_factory, temperature=self.score_temperature,
                               packing=optim.packing)

    def scoring_path(self, model: Any = None) -> tuple[Any, Any]:
        """The model and autocast region a scoring pass runs on. With a bf16 compute copy
        (``model.bf16_compute=param_copy``) the current weights are scored on the refreshed copy, and a
        model already held in bf16 (the KL reference, a frozen teacher) without autocast: the way the copy's
        loss forwards compute, so a score and a loss forward of the same weights agree (π_old's ratio, SEED's
        teacher gap, the KL at the start are then differences of weights, not of precision paths). Else the
        model (default: the master) under the policy's autocast."""
        policy = self.policy
        compute = policy.compute_copy()
        if compute is None:
            return model or policy.model, policy.autocast
        if model is None:
            compute.refresh()
            return compute.model, contextlib.nullcontext
        held_in = next(model.parameters()).dtype
        return model, contextlib.nullcontext if held_in == compute.dtype else policy.autocast


class Agent(ABC):
    """Base class of every agent; the trainer uses exactly these members.

    Subclasses set ``name`` and ``Config`` (a dataclass subclassing `AgentConfig`) and implement
    `prepare` and `loss`; `check_config`, `needs_reference`, `transform_prompt` and `transform_eval_prompt`
    have defaults."""

    name: ClassVar[str] = ""
    Config: ClassVar[type[AgentConfig]] = AgentConfig

    def __init__(self, config: AgentConfig, context: AgentContext):
        self.config = config
        self.context = context

    @classmethod
    def check_config(cls, run_config: RunConfig, config: AgentConfig) -> None:
        """Cross-field checks of this agent's settings against the run config, made when the config is
        validated (`seedbench.config.validate_config`), before anything loads or is written. `config` is the
        agent's ``algo`` config, its fields already checked one by one. Raise
        `seedbench.config.ConfigError` with a one-line message naming the field and the fix. Default: none."""

    @classmethod
    def context_budgets(cls, run_config: RunConfig, config: AgentConfig) -> list[tuple[str, int]]:
        """The agent's own generations besides the acting steps, as ``(the fields, prompt + response tokens)``:
        the engine's context length covers them (`seedbench.config.context.required_context`) and the model's
        positions must hold them (checked with the config). Default: none."""
        return []

    @classmethod
    def needs_reference(cls, config: AgentConfig) -> bool:
        """Whether updates use the frozen reference model: the trainer loads it (before the agent exists)
        and computes `MiniBatch.ref_logp` exactly when this is True. Default: ``config.kl_coef > 0``."""
        return config.kl_coef > 0

    def transform_prompt(self, trajectory: Trajectory, content: str) -> str:
        """Training-rollout hook: the acting prompt of `trajectory`'s next step; what it returns is
        generated from, recorded and trained on. Default: unchanged."""
        return content

    def transform_eval_prompt(self, trajectory: Trajectory, content: str) -> str:
        """Evaluation-rollout hook (the trainer's evaluations and `seedbench eval <run>`). Default: the
        training hook, so an agent that changes prompts changes them at test time too; override to
        evaluate differently (the paper's Skill-GRPO trains with skills and is tested without them)."""
        return self.transform_prompt(trajectory, content)

    def invalid_penalty(self) -> float:
        """``config.invalid_penalty``, or the env's ``invalid_action_penalty`` when that is None."""
        if self.config.invalid_penalty is not None:
            return self.config.invalid_penalty
        return float(self.context.env.invalid_action_penalty)

    def token_signals(self, samples: list[TrainSample], old_logp: list[list[float]]) -> list[dict[str, list[float]] | None]:
        """Per-token numbers worth showing next to a response in ``seedbench view`` (SEED: where a skill
        moved the policy), one entry per sample of the update: None, or ``{signal name: one value per
        response token}``. Called by the trainer once per update with the pre-update log-probs of the
        samples; it saves the entries of ``token_signal_trajectories`` trajectories to
        ``token_signals.jsonl`` (docs/viewer.md). Default: none."""
        return [None] * len(samples)

    @abstractmethod
    def prepare(self, trajectories: list[Trajectory], rewards: list[float], iteration: int) -> PreparedUpdate:
        """Samples (with advantages) for one update from this iteration's kept trajectories and their
        rewards (``rollout.reward``: success or env return). May run extra forward passes
        (``self.context.score``) or generations (``self.context.engine``)."""

    @abstractmethod
    def loss(self, mb: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Loss of one micro-batch summed over tokens with `MiniBatch.loss_weight`, and token-summed metrics
        (``train/…`` or the agent's own prefix); the trainer divides both by the mini-batch's
        response-token count, which with the weights gives the ``optim.loss_agg_mode`` aggregation."""
