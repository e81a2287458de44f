"""The GRPO + on-policy (self-)distillation family of the SDAR reference code (docs/method.md §9) as one
agent whose config values are the methods; `seedbench.agents.CATALOGUE` names them.

One update, on top of GRPO (`GRPOAgent`), in `prepare`:

1. each trajectory gets its **privileged context** (``algo.privileged``): skills from a library
   (`seedbench.agents.skill_sources`), or the env's expert plan from the task's start;
2. each step's *identical* sampled response ids are re-scored under a **teacher prompt** that carries that
   context (``algo.teacher_prompt``), by the **teacher** (``algo.teacher``: the policy itself, pre-update
   weights, as in the reference; or a fixed checkpoint) → ``teacher_logp``, fixed for the update;

and in `loss`, one or both of:

- a **distillation term** from `seedbench.agents.losses` (``algo.distill_loss``): ``gated_opd``
  (SDAR, OPSD, GRPO+OPSD with β = 0, RetireOPD) or ``sdl`` (Skill-SD), weighted by ``distill_coef``
  (decayed linearly to 0 over ``warmdown_steps`` updates when set) and summed with the run's
  ``optim.loss_agg_mode`` weights over the tokens that have a teacher;
- **RLSD advantage shaping** (``algo.advantage_shaping=rlsd``): the PPO term sees the teacher-reweighted
  token advantages of `rlsd_token_advantages`, with λ decayed over ``warmdown_steps``.

``pg_coef = 0`` removes the PPO term (pure OP(S)D). ``act_skills`` puts the context in the acting prompt
instead (RetireOPD's phase 1, the skill-conditioned teacher). ``retire`` is RetireOPD's phase 2: the
teacher is dropped for good once the student's training success reaches ``retire_fraction`` of
``teacher_success`` *and* the teacher–student gap has not reached a new low for ``retire_patience``
updates; from then on the update is GRPO alone.

The teacher and its context are written to the run's summary (``privileged``), which the report's
protocol card shows, so a run that used privileged information says so.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import torch

from seedbench.agents.base import MiniBatch, PreparedUpdate
from seedbench.agents.grpo import GRPOAgent, GRPOConfig
from seedbench.agents.losses import TokenInputs, policy_loss, rlsd_token_advantages
from seedbench.config import ConfigError, Count, ModelConfig, NonNegative, Range, UnitInterval
from seedbench.agents.skill_sources import load_skill_source
from seedbench.models.policy import load_policy
from seedbench.models.vision import prompt_images
from seedbench.models.weights import frozen_copy
from seedbench.rollout.prompting import insert_skill, render_prompt

PRIVILEGED_HEADERS = {"skills": "[Privileged Skill Information]", "expert_plan": "[Privileged Expert Plan]"}
RETIREMENT_FILE = "retirement.json"


def warmdown_factor(iteration: int, warmdown_steps: int) -> float:
    """Linear decay from 1 at update 0 to 0 at `warmdown_steps` (the reference's ``1 − step / W``, 0 from
    W on); 1 throughout when ``warmdown_steps <= 0``."""
    if warmdown_steps <= 0:
        return 1.0
    return max(0.0, 1.0 - iteration / warmdown_steps)


@dataclass
class RetirementState:
    """RetireOPD's adaptive retirement, one `observe` per update while the teacher is active."""

    fraction: float
    patience: int
    min_delta: float = 0.0
    best_gap: float | None = None
    since_best: int = 0
    retired_at: int | None = None

    def observe(self, iteration: int, gap: float, success: float, teacher_success: float) -> bool:
        """Record this update's teacher–student gap (mean |log π_T − log π| over the scored tokens) and the
        student's training success; True once retired. The gap "stops shrinking" when `patience`
        consecutive updates brought no new low (by more than `min_delta`)."""
        if self.retired_at is not None:
            return True
        if self.best_gap is None or gap < self.best_gap - self.min_delta:
            self.best_gap, self.since_best = gap, 0
        else:
            self.since_best += 1
        if self.since_best >= self.patience and success >= self.fraction * teacher_success:
            self.retired_at = iteration
        return self.retired_at is not None


@dataclass
class DistillConfig(GRPOConfig):
    distill_loss: Literal["gated_opd", "sdl", "none"] = "gated_opd"
    """Distillation term (a `seedbench.agents.losses.POLICY_LOSSES` name): ``gated_opd`` (SDAR's
    ``compute_sdar_loss``), ``sdl`` (Skill-SD's ``compute_sdl_loss``) or ``none``."""
    distill_coef: NonNegative = 0.01
    """Weight of the distillation term (reference scripts: 0.01 for SDAR/OPSD/GRPO+OPSD, 0.001 Skill-SD)."""
    gate_beta: NonNegative = 5.0
    """β of the ``gated_opd`` gate sigmoid(β·gap); 0 = constant gate 0.5 (the reference's GRPO+OPSD)."""
    advantage_shaping: Literal["none", "rlsd"] = "none"
    """``rlsd``: the PPO term uses RLSD's teacher-reweighted token advantages."""
    rlsd_lambda: NonNegative = 0.5
    """RLSD's initial mixing λ (reference: 0.5)."""
    rlsd_clip_eps: UnitInterval = 0.2
    """RLSD's clip of the token weight to [1 − ε, 1 + ε] (reference: 0.2)."""
    warmdown_steps: int = -1
    """Updates over which ``distill_coef`` and ``rlsd_lambda`` decay linearly to 0; ≤ 0 = constant
    (RLSD reference script: 100)."""
    teacher: Literal["self", "checkpoint"] = "self"
    """``self`` (reference OPSD: the policy being trained, pre-update weights) or ``checkpoint`` (a fixed
    model, `teacher_model`)."""
    teacher_model: str = ""
    """``checkpoint`` only: the teacher's path (same tokenizer as the policy); empty = the run's initial
    weights."""
    privileged: Literal["skills", "expert_plan", "none"] = "skills"
    """The teacher's privileged context: ``skills`` (from `skill_library`), ``expert_plan`` (the env's
    ``expert_plan()`` at the task's start: for Search-QA the answer) or ``none`` (a plain teacher model)."""
    skill_library: str = ""
    """``skills``: a skill directory (``skill_mapping.json`` + Markdown, SDAR's layout) or a JSONL library."""
    skill_retrieval: Literal["task_type", "general_only"] = "task_type"
    """Skill-directory retrieval: ``task_type`` (the reference after its ALFWorld fix) or ``general_only``
    (before it). See `seedbench.agents.skill_sources`."""
    skill_all: bool = False
    """Every skill of the directory for every task (the reference's ``skill_all``)."""
    teacher_prompt: Literal["prefix", "after_task"] = "prefix"
    """Where the context goes in the teacher's prompt: ``prefix`` (reference: a ``[Privileged Skill
    Information]`` block before the whole chat-templated prompt) or ``after_task`` (the skill block after
    the task line, as SEED and the acting prompts of ``act_skills`` place it)."""
    act_skills: bool = False
    """The context in the acting prompt of training and evaluation, no teacher pass (RetireOPD phase 1)."""
    retire: bool = False
    """RetireOPD phase 2: drop the teacher adaptively (needs `teacher_success`)."""
    teacher_success: Annotated[float, Range(0, 1)] | None = None
    """``retire``: the phase-1 teacher's validation success rate."""
    retire_fraction: UnitInterval = 0.9
    """``retire``: the share of `teacher_success` the student's training success must reach (0.9: the paper's
    default as a summary of its full text reports it; docs/method.md §9.1)."""
    retire_patience: Count = 3
    """``retire``: updates without a new low of the teacher–student gap that count as "stopped shrinking"
    (seedbench's choice: the paper's window length is not known from a primary source)."""
    retire_min_delta: NonNegative = 0.0
    """``retire``: how much lower a gap must be to count as a new low."""


class DistillAgent(GRPOAgent):
    name = "distill"
    Config = DistillConfig

    def __init__(self, config: DistillConfig, context: Any):
        super().__init__(config, context)
        self.source = None
        if config.privileged == "skills" and self._uses_context():
            self.source = self._load_skills()
        if config.privileged == "expert_plan" and not hasattr(getattr(context, "env", None), "expert_plan"):
            raise ConfigError(f"algo.privileged=expert_plan: env {type(getattr(context, 'env', None)).__name__} has "
                              "no expert_plan(); use algo.privileged=skills with algo.skill_library=<path>")
        self._teacher_model = None
        if config.teacher == "checkpoint" and self._uses_teacher():
            self._teacher_model = self._load_teacher()
        self.retirement = RetirementState(config.retire_fraction, config.retire_patience, config.retire_min_delta)
        self._restore_retirement()
        self._act_skills: dict[str, str] = {}
        if getattr(context, "run_dir", None) is not None:
            context.run_dir.update_summary(privileged=self.privileged_card())

    # -- config ---------------------------------------------------------------------------------------
    @classmethod
    def check_config(cls, run_config: Any, config: DistillConfig) -> None:
        """Combinations that cannot mean what they say, as one-line errors naming the fix (made when the
        run config is validated, before anything loads)."""
        if config.retire and config.teacher_success is None:
            raise ConfigError("algo.retire needs the phase-1 teacher's validation success: pass --set "
                              "algo.teacher_success=<0..1> (and algo.teacher_model=<its checkpoint>)")
        if config.retire and (config.teacher != "checkpoint" or not config.teacher_model):
            raise ConfigError("algo.retire distils from the phase-1 teacher: pass --set algo.teacher=checkpoint "
                              "algo.teacher_model=<the retire-opd-teacher run's checkpoint>")
        if config.retire and config.distill_loss == "none":
            raise ConfigError("algo.retire drops a distillation term, but algo.distill_loss is none")
        if config.act_skills and config.privileged == "none":
            raise ConfigError("algo.act_skills puts the privileged context in the acting prompt: set algo.privileged")

    def _uses_teacher(self) -> bool:
        cfg = self.config
        return not cfg.act_skills and (cfg.distill_loss != "none" or cfg.advantage_shaping != "none")

    def _uses_context(self) -> bool:
        return self.config.act_skills or self._uses_teacher()

    def _load_skills(self):
        if not self.config.skill_library:
            raise ConfigError("this agent's teacher reads skills from a library: pass --set algo.skill_library=<skill "
                              "directory with skill_mapping.json, or annotations.jsonl>")
        try:
            return load_skill_source(self.config.skill_library, self.config.skill_retrieval, self.config.skill_all)
        except (FileNotFoundError, ValueError) as err:
            raise ConfigError(f"algo.skill_library: {err}") from err

    def _load_teacher(self):
        ctx, policy = self.context, self.context.policy
        if not self.config.teacher_model:
            if policy.ref_model is not None:
                return policy.ref_model
            return frozen_copy(policy.model, policy.compute_dtype or torch.float32)
        teacher = load_policy(ModelConfig(name=self.config.teacher_model, device=ctx.config.model.device,
                                          dtype=ctx.config.model.dtype), need_reference=False, seed=ctx.config.seed)
        if len(teacher.tokenizer) != len(policy.tokenizer):
            raise ConfigError(f"algo.teacher_model {self.config.teacher_model}: its tokenizer ({len(teacher.tokenizer)} "
                              f"tokens) is not the policy's ({len(policy.tokenizer)}); the teacher re-scores the "
                              "policy's token ids, so both need the same tokenizer")
        return teacher.model

    def privileged_card(self) -> dict[str, Any]:
        """What the run's protocol card records about the teacher and its privileged information."""
        cfg = self.config
        if cfg.teacher == "self":
            teacher = "self (the current policy, pre-update weights)"
        else:
            teacher = f"checkpoint {cfg.teacher_model or '(the run initial weights)'}"
        if cfg.privileged == "skills":
            context = f"skills: {self.source.description}" if self.source is not None else "skills (unused)"
        elif cfg.privileged == "expert_plan":
            context = "expert plan: env.expert_plan() at the task's start"
        else:
            context = "none"
        card = {"context": context, "teacher": teacher if self._uses_teacher() else "none",
                "where": "acting prompt (train and eval)" if cfg.act_skills else f"teacher prompt ({cfg.teacher_prompt})"}
        if cfg.retire:
            card["teacher_success"] = cfg.teacher_success
        return card

    # -- retirement persistence -------------------------------------------------------------------------
    def _retirement_path(self):
        run_dir = getattr(self.context, "run_dir", None)
        return run_dir.file(RETIREMENT_FILE) if run_dir is not None else None

    def _restore_retirement(self) -> None:
        path = self._retirement_path()
        if self.config.retire and path is not None and path.is_file():
            self.retirement.retired_at = json.loads(path.read_text()).get("retired_at")

    def _save_retirement(self) -> None:
        path = self._retirement_path()
        if path is not None and os.environ.get("RANK", "0") == "0":
            path.write_text(json.dumps({"retired_at": self.retirement.retired_at}))

    # -- privileged context ---------------------------------------------------------------------------
    def context_for(self, trajectory: Any, prompt_text: str) -> tuple[str | None, dict[str, Any]]:
        """The trajectory's privileged text (None: none available) and where it came from."""
        cfg = self.config
        if cfg.privileged == "skills":
            first = trajectory.steps[0].observation if trajectory.steps else ""
            return self.source.skill_for(trajectory.task_id, trajectory.task_text, prompt_text, first, trajectory.won)
        if cfg.privileged == "expert_plan":
            env = self.context.env
            env.reset(seed=trajectory.task.seed, options={"split": trajectory.task.split})
            plan = env.expert_plan()
            if not plan:
                return None, {"expert_plan": None}
            return "Solution: " + "; ".join(map(str, plan)), {"expert_plan_steps": len(plan)}
        return "", {}

    def teacher_prompt(self, step: Any, text: str) -> list[int]:
        """Token ids of the teacher's prompt for one step sample (``text``: its privileged context)."""
        tokenizer = self.context.policy.tokenizer
        if not text:
            return list(step.prompt_ids)
        if self.config.teacher_prompt == "after_task":
            return render_prompt(tokenizer, insert_skill(step.user_content, text), prompt_images(step.prompt_ids))
        original = tokenizer.decode(list(step.prompt_ids), skip_special_tokens=False)
        header = PRIVILEGED_HEADERS[self.config.privileged]
        return tokenizer(f"{header}\n{text}\n\n{original}", add_special_tokens=False)["input_ids"]

    # -- act-time context (RetireOPD phase 1) ---------------------------------------------------------
    def transform_prompt(self, trajectory: Any, content: str) -> str:
        if not self.config.act_skills:
            return content
        key = trajectory.episode_id
        if key not in self._act_skills:
            text, _ = self.context_for(trajectory, content)
            self._act_skills[key] = text or ""
        text = self._act_skills[key]
        return insert_skill(content, text) if text else content

    # -- one update -----------------------------------------------------------------------------------
    def prepare(self, trajectories: list, rewards: list[float], iteration: int) -> PreparedUpdate:
        cfg = self.config
        self._act_skills.clear()
        prepared = super().prepare(trajectories, rewards, iteration)
        samples, metrics = prepared.samples, prepared.metrics
        if not self._uses_teacher() or not samples:
            return prepared
        factor = warmdown_factor(iteration, cfg.warmdown_steps)
        coef = cfg.distill_coef * factor if cfg.distill_loss != "none" else 0.0
        lam = cfg.rlsd_lambda * factor if cfg.advantage_shaping == "rlsd" else 0.0
        if cfg.retire and self.retirement.retired_at is not None:
            coef = 0.0
        metrics.update({"distill/coef": coef, "distill/retired": float(self.retirement.retired_at is not None)})
        if cfg.advantage_shaping == "rlsd":
            metrics["rlsd/lambda"] = lam
        if coef == 0.0 and lam == 0.0:  # nothing reads the teacher this update: skip its pass
            return prepared

        steps = [step for traj in trajectories for step in traj.steps]
        contexts, records = [], []
        for traj in trajectories:
            text, info = self.context_for(traj, traj.steps[0].user_content if traj.steps else traj.task_text)
            contexts.append(text)
            records.append({"iteration": iteration, "episode_id": traj.episode_id, "task": traj.task.key(),
                            "task_id": traj.task_id, "privileged": cfg.privileged, "ok": text is not None,
                            "chars": len(text or ""), **info})
        scored = [i for i, s in enumerate(samples) if contexts[s.traj_index] is not None]
        prompts = [self.teacher_prompt(steps[i], contexts[samples[i].traj_index]) for i in scored]
        responses = [samples[i].response_ids for i in scored]
        teacher = self.context.score(prompts, responses, model=self._teacher_model) if scored else []
        teacher_of = dict(zip(scored, teacher))
        for index, sample in enumerate(samples):
            n = len(sample.response_ids)
            sample.extras["teacher_logp"] = list(teacher_of.get(index, [0.0] * n))
            sample.extras["distill_mask"] = [1.0 if index in teacher_of else 0.0] * n
        for record in records:
            self.context.run_dir.log("privileged.jsonl", record)
        prepared.update_info.update({"distill_coef": coef, "rlsd_lambda": lam,
                                     "update_tokens": float(sum(len(s.response_ids) for s in samples)),
                                     "teacher_tokens": float(sum(len(samples[i].response_ids) for i in scored))})
        metrics["distill/teacher_scored_samples"] = float(len(scored))
        if not prepared.update_info["teacher_tokens"]:
            metrics.update({"distill/gate_mean": None, "distill/teacher_gap_mean": None})
        if cfg.retire and scored:
            self._observe_retirement(iteration, [samples[i] for i in scored], teacher, trajectories, metrics)
        return prepared

    def _observe_retirement(self, iteration: int, samples: list, teacher: list[list[float]], trajectories: list,
                            metrics: dict) -> None:
        student = self.context.score([s.prompt_ids for s in samples], [s.response_ids for s in samples])
        diffs = [abs(t - s) for ts, ss in zip(teacher, student) for t, s in zip(ts, ss)]
        gap = sum(diffs) / max(len(diffs), 1)
        success = sum(bool(t.won) for t in trajectories) / max(len(trajectories), 1)
        was_retired = self.retirement.retired_at is not None
        self.retirement.observe(iteration, gap, success, float(self.config.teacher_success))
        if self.retirement.retired_at is not None and not was_retired:
            self._save_retirement()
        metrics.update({"retire/teacher_gap": gap, "retire/student_success": success,
                        "retire/since_best_gap": float(self.retirement.since_best),
                        "retire/target_success": self.config.retire_fraction * float(self.config.teacher_success)})

    def loss(self, mb: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        cfg = self.config
        teacher = mb.extras.get("teacher_logp")
        if teacher is None:
            return super().loss(mb)
        active = mb.mask * mb.extras["distill_mask"]
        lam = mb.update_info.get("rlsd_lambda", 0.0)
        if cfg.advantage_shaping == "rlsd" and lam > 0:
            shaped = rlsd_token_advantages(mb.advantages, mb.old_logp, teacher, lam, cfg.rlsd_clip_eps)
            plain = mb.advantages.unsqueeze(-1).expand_as(shaped)
            mb = dataclasses.replace(mb, advantages=torch.where(active > 0, shaped, plain))
        loss, metrics = super().loss(mb)
        coef = mb.update_info.get("distill_coef", 0.0)
        if cfg.distill_loss == "none" or coef == 0.0:
            return loss, metrics
        term = policy_loss(cfg.distill_loss).from_config(TokenInputs(mb.logp, mb.old_logp, None, teacher), cfg)
        loss = loss + coef * (term.tokens * mb.loss_weight * mb.extras["distill_mask"]).sum()
        metrics["distill/loss"] = (term.tokens * active).sum().detach()
        teacher_tokens = mb.update_info.get("teacher_tokens", 0.0)
        if teacher_tokens:  # means over the tokens that have a teacher: rescale the token sums
            scale = mb.update_info["update_tokens"] / teacher_tokens
            with torch.no_grad():
                metrics["distill/teacher_gap_mean"] = (term.stats["gap"] * active).sum() * scale
                if "gate" in term.stats:
                    metrics["distill/gate_mean"] = (term.stats["gate"] * active).sum() * scale
        return loss, metrics
