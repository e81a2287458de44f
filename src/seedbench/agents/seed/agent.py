"""SEED, stage 2 (docs/method.md §5): GRPO plus a gated on-policy distillation term whose teacher is the
policy itself, prompted with a skill it wrote about the very trajectory being trained on.

One update, on top of GRPO (`GRPOAgent`), in `prepare`:

1. every finished trajectory (successes and failures) is analysed with the analyzer prompt of §4, greedy,
   one sample, through the trainer's generation engine (the *current* policy — "self-evolving");
2. the answer is parsed leniently; a failed or empty analysis leaves that trajectory with GRPO only, and
   is counted (`seed/analysis_success_rate`);
3. for each step of an analysed trajectory the skill block is inserted after the task line of the step's
   prompt (`seedbench.rollout.prompting.insert_skill`), and the *identical* sampled response ids are re-scored
   under that prompt with the pre-update weights → ``teacher_logp``, fixed for the update;

and in `loss`: ``L = L_GRPO + λ_opd · Σ m·g·(teacher_logp − logp)`` with the stop-gradient gate
``g = sigmoid(β·(teacher_logp − logp))`` (`gated_opd_loss`; the trainer divides by the mini-batch token
count, which makes the sum a token mean). No ratio, no clipping.

Ablations are values of `SEEDConfig`, registered in `seedbench.agents`: ``analyzer`` = ``current``
(SEED), ``frozen`` (a fixed checkpoint analyses) or ``static`` (skills retrieved from a fixed library);
``train=False`` + ``act_skills=True`` is the Skill-Prompt baseline (library skills in the prompt at act
time, no update) and ``act_skills=True`` + ``opd_coef=0`` is Skill-GRPO (GRPO with those skills in context).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from seedbench.agents.seed.analysis import Analysis, episode_steps, fit_analyzer_content, parse_analysis
from seedbench.agents.base import AgentContext, MiniBatch, PreparedUpdate
from seedbench.agents.grpo import GRPOAgent, GRPOConfig
from seedbench.agents.losses import gated_opd_loss
from seedbench.config.errors import ConfigError
from seedbench.config.schema import Count, ModelConfig, NonNegative, Positive, RunConfig
from seedbench.models.vision import prompt_images
from seedbench.rollout.prompting import current_observation, insert_skill, render_prompt  # noqa: F401 - current_observation re-exported
from seedbench.training.origin import ANALYZER_SFT_MARKER  # the stage-1 provenance file, written by sft-analyzer
from seedbench.agents.seed.skill_library import SkillLibrary
from seedbench.engines.base import SamplingParams, generate_with_progress
from seedbench.engines.factory import hf_options
from seedbench.engines.hf import HFEngine
from seedbench.models.policy import load_policy
from seedbench.models.weights import frozen_copy
from seedbench.progress import progress_bar

ANALYZERS = ("current", "frozen", "static")


def opd_scale(mode: str, active_tokens: float, minibatch_tokens: int, micro_batches: int) -> float:
    """Factor on a micro-batch's summed OPD term before the trainer divides every loss sum by
    `minibatch_tokens`.

    ``active_tokens`` (reference code): the term is a masked mean over this micro-batch's OPD-active
    tokens, divided by the number of gradient-accumulation micro-batches, so λ_opd keeps its meaning
    whatever fraction of trajectories was analysed: factor ``minibatch_tokens / (active · micro_batches)``
    (0 without active tokens). ``all_tokens`` (older seedbench rule): the sum is divided like every other
    term by all response tokens, so the effective weight is λ_opd × the OPD-active token share."""
    if mode == "all_tokens":
        return 1.0
    if active_tokens <= 0:
        return 0.0
    return minibatch_tokens / (float(active_tokens) * micro_batches)


@dataclass
class SEEDConfig(GRPOConfig):
    opd_coef: NonNegative = 0.01
    """λ_opd, weight of the distillation term added to the GRPO loss (reference code: 0.01)."""
    opd_norm: Literal["active_tokens", "all_tokens"] = "active_tokens"
    """Normaliser of the distillation term, whatever ``optim.loss_agg_mode`` the GRPO terms use:
    ``active_tokens`` (reference code: the token mean over the OPD-active tokens of each micro-batch, ÷
    accumulation steps, i.e. the default ``token-mean`` rule restricted to those tokens) or ``all_tokens``
    (Σ ÷ all response tokens of the mini-batch, the ``global-token-mean`` rule, so its weight shrinks with
    the analysis success rate). See `opd_scale`."""
    skill_block: Literal["reference", "seedbench"] = "reference"
    """Wording of the skill block in the teacher's (and act-time) prompt, whose tokens the gate and the
    distillation signal depend on: ``reference`` (the reference code's ``**Episode-Level Skill**`` header,
    "Refer to this episode-level skill when deciding…", the skill in brackets, blank lines around the block)
    or ``seedbench`` (plain header, "Use the following skill, learned from a previous attempt…", the bare
    skill). See `seedbench.rollout.prompting.skill_block`."""
    gate_beta: Positive = 5.0
    """β of the gate sigmoid(β·gap) (reference code: 5)."""
    analyzer: Literal["current", "frozen", "static"] = "current"
    """Who writes the skills: ``current`` (the policy being trained, SEED), ``frozen`` (a fixed checkpoint,
    `analyzer_model`) or ``static`` (retrieved from `skill_library` by task similarity, no analysis)."""
    analyzer_model: str = ""
    """``frozen`` only: checkpoint that analyses; empty = the run's initial weights (the stage-1
    checkpoint when the run starts from one)."""
    skill_library: str = ""
    """``static`` and act-time skills: a JSONL library (stage-1 ``annotations.jsonl``, or the directory
    holding it); empty = the annotations recorded in the stage-1 checkpoint, when there is one."""
    library_match_outcome: bool = True
    """``static``: prefer library entries with the trajectory's outcome (workflow for a success, avoidance
    rules for a failure), like the on-policy analyzer, which also sees the outcome."""
    analysis_max_new_tokens: Count = 256
    """Analyzer answer budget (reference code: 4096 for thinking models; a JSON answer needs ~100-200)."""
    analysis_max_prompt_tokens: Count = 4096
    """Analyzer prompt budget; longer episodes lose their oldest steps (with a note in the prompt)."""
    train: bool = True
    """False = no update at all (Skill-Prompt baseline: skills only at act time)."""
    act_skills: bool = False
    """Insert library skills in the acting prompt of training rollouts (the Skill-Prompt and Skill-GRPO
    baselines)."""
    eval_skills: bool = True
    """With `act_skills`: insert them at evaluation too (Skill-Prompt, the paper's Skill-GRPO*); False =
    evaluate without skills (the paper's Skill-GRPO: trained with skills in context, tested without)."""
    expect_analyzer_sft: bool = True
    """Warn when the starting model is not a ``seedbench sft-analyzer`` checkpoint (SEED proper starts from
    one; without it a small model may rarely write valid JSON, which silently turns SEED into GRPO)."""


class SEEDAgent(GRPOAgent):
    name = "seed"
    Config = SEEDConfig

    def __init__(self, config: SEEDConfig, context: AgentContext):
        super().__init__(config, context)
        if config.analyzer not in ANALYZERS:
            raise ConfigError(f"algo.analyzer: unknown {config.analyzer!r}; choose one of {', '.join(ANALYZERS)}")
        self.stage1 = self._stage1_marker()
        rank_0 = os.environ.get("RANK", "0") == "0"  # under torchrun, one warning for the run
        if config.expect_analyzer_sft and self.stage1 is None and config.train and rank_0:
            print("seedbench: warning: the starting model is not an analyzer-SFT checkpoint (`seedbench "
                  "sft-analyzer`); SEED without stage 1 is the seed-no-sft ablation. Watch seed/analysis_success_rate.",
                  flush=True)
        self.library = None
        if config.analyzer == "static" or config.act_skills:
            self.library = self._load_library()
        self._analysis_engine = None
        self._frozen_tokenizer = None  # the frozen analyzer's tokenizer, set by `_frozen_engine`
        if config.analyzer == "frozen" and config.train:
            self._analysis_engine = self._frozen_engine()
        self._act_skills: dict[str, str] = {}
        self._act_calls = 0

    # -- setup ------------------------------------------------------------------------------------
    @classmethod
    def context_budgets(cls, run_config: RunConfig, config: SEEDConfig) -> list[tuple[str, int]]:
        """Self-analysis: a whole episode's prompt plus the analysis (none for a library or without training)."""
        if config.analyzer == "static" or not config.train:
            return []
        return [("algo.analysis_max_prompt_tokens + algo.analysis_max_new_tokens",
                 config.analysis_max_prompt_tokens + config.analysis_max_new_tokens)]

    @classmethod
    def needs_reference(cls, config: SEEDConfig) -> bool:
        """Only an agent that trains uses the KL reference (Skill-Prompt, ``train=False``, never updates)."""
        return config.train and config.kl_coef > 0

    def _stage1_marker(self) -> dict | None:
        path = Path(str(self.context.policy.source))
        marker = path / ANALYZER_SFT_MARKER
        if marker.is_file():
            try:
                return json.loads(marker.read_text())
            except json.JSONDecodeError:
                return {}
        return None

    def _load_library(self):
        path = self.config.skill_library
        if not path and self.stage1 and self.stage1.get("annotations"):
            path = self._stage1_annotations(self.stage1["annotations"])
        if not path:
            raise ConfigError("this agent retrieves skills from a library: pass --set algo.skill_library=<path to "
                              "annotations.jsonl> (written by `seedbench sft-analyzer`), or start from a stage-1 checkpoint")
        try:
            return SkillLibrary.load(path)
        except (FileNotFoundError, ValueError) as err:
            raise ConfigError(f"algo.skill_library: {err}") from err

    def _stage1_annotations(self, recorded: str) -> str:
        """The stage-1 checkpoint's annotations file. `seedbench sft-analyzer` writes it beside the model folder
        and records its path relative to that folder; a marker that records an absolute path (older checkpoints)
        may name where the build ran before the checkpoint was moved (the starting-model cache builds in a
        scratch folder and renames it), so the file beside the model folder is taken when that path is gone."""
        model_dir = Path(str(self.context.policy.source))
        recorded_path = Path(recorded)
        candidates = [recorded_path if recorded_path.is_absolute() else model_dir / recorded_path,
                      model_dir.parent / recorded_path.name]
        return str(next((p for p in candidates if p.is_file()), candidates[0]))

    def _frozen_engine(self):
        ctx, policy = self.context, self.context.policy
        batch = ctx.config.rollout.generation_batch_size
        options = hf_options(ctx.config)  # the run's `hf` switches apply to the frozen analyzer too
        if self.config.analyzer_model:
            model_cfg = ModelConfig(name=self.config.analyzer_model, device=ctx.config.model.device,
                                    dtype=ctx.config.model.dtype)
            frozen = load_policy(model_cfg, need_reference=False, seed=ctx.config.seed)
            self._frozen_tokenizer = frozen.tokenizer
            return HFEngine(frozen.model, frozen.tokenizer, frozen.device, batch_size=batch, dtype=frozen.compute_dtype,
                            **options)
        # The run's initial weights: reuse the frozen KL reference when there is one, else snapshot now
        # (before the first update).
        self._frozen_tokenizer = policy.tokenizer
        if policy.ref_model is not None:
            model = policy.ref_model
        else:
            model = frozen_copy(policy.model, policy.compute_dtype or torch.float32)
        return HFEngine(model, policy.tokenizer, policy.device, batch_size=batch, **options)

    # -- act-time skills (Skill-Prompt) -----------------------------------------------------------
    def transform_prompt(self, trajectory: Any, content: str) -> str:
        """Training-rollout hook: the acting prompt with the episode's library skill inserted after
        the task line. The skill is retrieved once per episode, at its first step, by task text + first
        observation. Other SEED variants leave the prompt alone."""
        if not self.config.act_skills or self.library is None:
            return content
        self._act_calls += 1
        key = trajectory.episode_id
        if key not in self._act_skills:
            first = trajectory.steps[0].observation if trajectory.steps else current_observation(content)
            self._act_skills[key] = self.library.retrieve(trajectory.task_text, first)[0].skill
        return insert_skill(content, self._act_skills[key], self.config.skill_block)

    def transform_eval_prompt(self, trajectory: Any, content: str) -> str:
        """Evaluation hook: the training hook when `eval_skills`, else the prompt unchanged."""
        return self.transform_prompt(trajectory, content) if self.config.eval_skills else content

    # -- one update -------------------------------------------------------------------------------
    def prepare(self, trajectories: list, rewards: list[float], iteration: int) -> PreparedUpdate:
        cfg = self.config
        if cfg.act_skills:
            if trajectories and self._act_calls == 0:
                raise RuntimeError("act_skills: the rollout never called agent.transform_prompt, so the acting "
                                   "prompts had no skills; use a rollout that supports the transform_prompt hook")
            self._act_skills.clear()
        if not cfg.train:  # Skill-Prompt: skills at act time only
            return PreparedUpdate([], {"seed/act_skill_episodes": float(len(trajectories))})
        prepared = super().prepare(trajectories, rewards, iteration)
        samples, metrics = prepared.samples, prepared.metrics
        if cfg.opd_coef == 0:  # nothing to distill (Skill-GRPO): skip the analysis and re-scoring passes
            return prepared
        steps = [step for traj in trajectories for step in traj.steps]
        assert len(steps) == len(samples), "GRPOAgent.advantages must yield one sample per step, in order"

        t0 = time.perf_counter()
        analyses, records = self.analyse(trajectories, rewards, iteration)
        t1 = time.perf_counter()
        skill_of_traj = [a.skill if a is not None else None for a in analyses]

        tokenizer = self.context.policy.tokenizer
        rescored = [i for i, s in enumerate(samples) if skill_of_traj[s.traj_index] is not None]
        # Same frames as the acting prompt (a vision policy's `Prompt` carries them), so the teacher sees the
        # images the student saw; the response ids are the identical sampled ones.
        aug_prompts = [render_prompt(tokenizer, insert_skill(steps[i].user_content, skill_of_traj[samples[i].traj_index],
                                                             self.config.skill_block),
                                     prompt_images(steps[i].prompt_ids))
                       for i in rescored]
        teacher = self.context.score(aug_prompts, [samples[i].response_ids for i in rescored]) if rescored else []
        teacher_of = dict(zip(rescored, teacher))
        for index, sample in enumerate(samples):
            n = len(sample.response_ids)
            if index in teacher_of:
                sample.extras["teacher_logp"] = list(teacher_of[index])
                sample.extras["opd_mask"] = [1.0] * n
            else:
                sample.extras["teacher_logp"] = [0.0] * n
                sample.extras["opd_mask"] = [0.0] * n
        t2 = time.perf_counter()

        for record in records:
            self.context.run_dir.log("skills.jsonl", record)
        ok = [a for a in analyses if a is not None]
        skill_tokens = [len(tokenizer(a.skill, add_special_tokens=False)["input_ids"]) for a in ok]
        # Token counts of the whole update, for the gate statistics in `loss` (see there).
        prepared.update_info["update_tokens"] = float(sum(len(s.response_ids) for s in samples))
        prepared.update_info["opd_tokens"] = float(sum(len(samples[i].response_ids) for i in rescored))
        metrics.update({
            "seed/analysed_trajectories": len(analyses),
            "seed/analysis_success_rate": len(ok) / len(analyses) if analyses else 0.0,
            "seed/analysis_failures": len(analyses) - len(ok),
            "seed/skill_tokens_mean": sum(skill_tokens) / len(skill_tokens) if skill_tokens else 0.0,
            "seed/skill_chars_mean": sum(len(a.skill) for a in ok) / len(ok) if ok else 0.0,
            "seed/rescored_samples": len(rescored),
            "seed/analyzer_sft": 1.0 if self.stage1 is not None else 0.0,
            "time/analysis_s": t1 - t0,
            "time/rescore_s": t2 - t1,
        })
        if not prepared.update_info["opd_tokens"]:  # `loss` reports these over OPD-active tokens only
            metrics.update({"seed/gate_mean": None, "seed/gate_open_frac": None, "seed/teacher_gap_mean": None})
        return prepared

    def analyse(self, trajectories: list, rewards: list[float], iteration: int) -> tuple[list[Analysis | None], list[dict]]:
        """One analysis per trajectory (None = failed/empty) and the run-directory records of all of them."""
        cfg = self.config
        raw: list[str | None] = [None] * len(trajectories)
        extra: list[dict] = [{} for _ in trajectories]
        if cfg.analyzer == "static":
            analyses = []
            for t, traj in enumerate(trajectories):
                first = traj.steps[0].observation if traj.steps else ""
                entry, score = self.library.retrieve(traj.task_text, first,
                                                     traj.won if cfg.library_match_outcome else None)
                analyses.append(Analysis(entry.summary, entry.skill))
                extra[t] = {"library_source": entry.source, "library_similarity": round(score, 4)}
        else:
            engine = self._analysis_engine or self.context.engine
            tokenizer = self._frozen_tokenizer or self.context.policy.tokenizer

            def count(text: str) -> int:
                return len(tokenizer(text, add_special_tokens=False)["input_ids"])

            todo = [t for t, traj in enumerate(trajectories) if traj.steps]
            prompts = [render_prompt(tokenizer, fit_analyzer_content(
                trajectories[t].task_text, trajectories[t].won, episode_steps(trajectories[t]), count,
                cfg.analysis_max_prompt_tokens)) for t in todo]
            params = SamplingParams(max_new_tokens=cfg.analysis_max_new_tokens, greedy=True, stop=[])
            generations = []
            if prompts:
                # no total here: the engine sets the count it reports (HF: decode steps) as it starts
                with progress_bar(desc=f"iter {iteration} self-analysis", unit="token") as bar:
                    generations = generate_with_progress(engine, prompts, params, bar)
            for t, generation in zip(todo, generations):
                raw[t] = generation.text
            analyses = [parse_analysis(text) for text in raw]
        records = []
        for t, (traj, analysis) in enumerate(zip(trajectories, analyses)):
            records.append({
                "iteration": iteration, "episode_id": traj.episode_id, "group_id": traj.group_id,
                "task": traj.task.key(), "task_text": traj.task_text, "won": traj.won, "reward": rewards[t],
                "analyzer": cfg.analyzer, "ok": analysis is not None,
                "episode_summary": analysis.summary if analysis else None,
                "episode_skill": analysis.skill if analysis else None,
                "first_observation": traj.steps[0].observation if traj.steps else "",
                "raw": raw[t][:4000] if raw[t] is not None else None, **extra[t],
            })
        return analyses, records

    def token_signals(self, samples: list, old_logp: list[list[float]]) -> list[dict[str, list[float]] | None]:
        """``gap`` = teacher − student log-prob and ``gate`` = sigmoid(β·gap) of every re-scored sample, at the
        pre-update weights: the gate the update's first mini-batch applies (later mini-batches see it move
        with the weights). Samples without a skill have none."""
        import math

        beta, out = self.config.gate_beta, []
        for sample, student in zip(samples, old_logp):
            teacher, mask = sample.extras.get("teacher_logp"), sample.extras.get("opd_mask")
            if not teacher or not mask or not mask[0]:
                out.append(None)
                continue
            gap = [float(t) - float(s) for t, s in zip(teacher, student)]
            out.append({"gate": [1.0 / (1.0 + math.exp(-beta * g)) for g in gap], "gap": gap})
        return out

    def loss(self, mb: MiniBatch) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        loss, metrics = super().loss(mb)
        if "teacher_logp" not in mb.extras:
            return loss, metrics
        cfg = self.config
        opd_mask = mb.mask * mb.extras["opd_mask"]
        opd_sum, gate, gap = gated_opd_loss(mb.logp, mb.extras["teacher_logp"], opd_mask, cfg.gate_beta)
        loss = loss + cfg.opd_coef * opd_scale(cfg.opd_norm, float(opd_mask.sum()), mb.minibatch_tokens,
                                               mb.micro_batches) * opd_sum
        # The trainer divides every metric sum by the update's token count; gate statistics are means over
        # OPD-active tokens only, so their sums are rescaled by (all tokens / OPD-active tokens).
        metrics["seed/opd_loss"] = opd_sum.detach()
        metrics["seed/opd_active_ratio"] = opd_mask.sum()
        opd_tokens = mb.update_info.get("opd_tokens", 0.0)
        if opd_tokens:  # else `prepare` logs them as null
            metric_scale = mb.update_info["update_tokens"] / opd_tokens
            with torch.no_grad():
                metrics["seed/gate_mean"] = (gate * opd_mask).sum() * metric_scale
                metrics["seed/gate_open_frac"] = ((gate > 0.5).float() * opd_mask).sum() * metric_scale
                metrics["seed/teacher_gap_mean"] = (gap * opd_mask).sum() * metric_scale
        return loss, metrics

