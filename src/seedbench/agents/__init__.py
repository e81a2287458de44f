"""The agent catalogue: trainers and their registered variants (ablations are config overrides, not
copied classes). Each line: name, the class that implements it, one-line description, overrides, aliases.

The SEED ablations are named by the mechanism their config sets (``seed-frozen-analyzer``: analyzer
frozen); the SEED paper's names for the same runs (``seed-no-self-evolving``, …) are aliases, so either
name runs the same agent, a run records the catalogue name, and leaderboards group both as one method."""

from __future__ import annotations

from seedbench.registry import AgentEntry

_SEED = "seedbench.agents.seed.agent:SEEDAgent"
_DISTILL = "seedbench.agents.distill:DistillAgent"
_SDAR = "ref. ZJU-REAL/SDAR"

CATALOGUE: list[AgentEntry] = [
    AgentEntry("grpo", "seedbench.agents.grpo:GRPOAgent", "GRPO: group-normalised episode advantage, PPO-clip, KL to reference"),
    AgentEntry("gigpo", "seedbench.agents.gigpo:GiGPOAgent",
               "GiGPO: GRPO episode advantage + step advantage from anchor-state groups (gamma 0.95, omega 1)"),
    AgentEntry("seed", _SEED,
               "SEED: GRPO + gated self-distillation from skills the current policy writes (start from `sft-analyzer`)"),
    AgentEntry("seed-no-sft", _SEED, "SEED ablation: stage 2 from the base model, no analyzer SFT",
               {"expect_analyzer_sft": False}, aliases=("seed-no-analyzer-sft",)),
    AgentEntry("seed-frozen-analyzer", _SEED,
               "SEED ablation: a fixed checkpoint (default: the initial weights) analyses, not the current policy",
               {"analyzer": "frozen"}, aliases=("seed-no-self-evolving",)),
    AgentEntry("seed-static-skills", _SEED,
               "SEED ablation: skills retrieved by task similarity from a fixed library (stage-1 annotations)",
               {"analyzer": "static"}, aliases=("seed-no-on-policy-skills",)),
    AgentEntry("skill-prompt", _SEED, "baseline: library skills in the acting prompt, no training",
               {"train": False, "act_skills": True, "kl_coef": 0.0, "analyzer": "static"}),
    AgentEntry("skill-grpo", _SEED,
               "baseline (paper's Skill-GRPO): GRPO with library skills in the training prompts, evaluated without them",
               {"act_skills": True, "eval_skills": False, "opd_coef": 0.0, "analyzer": "static"}),
    AgentEntry("skill-grpo-star", _SEED,
               "baseline (paper's Skill-GRPO*): GRPO with library skills in the prompts of training and evaluation",
               {"act_skills": True, "eval_skills": True, "opd_coef": 0.0, "analyzer": "static"}),
    # The GRPO + on-policy (self-)distillation family of the SDAR reference code (docs/method.md §9): one
    # agent, `DistillAgent`; each line is its reference's configuration. Teachers read privileged skills
    # from algo.skill_library (a skill directory or a JSONL library).
    AgentEntry("sdar", _DISTILL,
               f"SDAR: GRPO + gated self-distillation (beta 5, coef 0.01) from a skill-prompted self-teacher [{_SDAR} "
               "sdar_utils.py, main_sdar.py]"),
    AgentEntry("opsd", _DISTILL,
               f"OPSD: pure on-policy self-distillation (no PPO term; gated, beta 5, coef 0.01) [{_SDAR} "
               "examples/opsd_trainer, sdar_utils.py]", {"pg_coef": 0.0}),
    AgentEntry("opd", _DISTILL,
               "OPD: pure on-policy distillation from a fixed teacher checkpoint (algo.teacher_model; default the "
               f"initial weights) with privileged skills [{_SDAR} sdar_utils.py, teacher swapped for a checkpoint]",
               {"pg_coef": 0.0, "teacher": "checkpoint"}),
    AgentEntry("grpo-opd", _DISTILL,
               f"GRPO+OPSD: GRPO + ungated self-distillation (beta 0: gate 0.5, coef 0.01) [{_SDAR} "
               "examples/grpo_opsd_trainer, sdar_utils.py]", {"gate_beta": 0.0}, aliases=("grpo-opsd",)),
    AgentEntry("skill-sd", _DISTILL,
               f"Skill-SD: GRPO + ratio-weighted k3 self-distillation (coef 0.001) [{_SDAR} skillsd_utils.py, "
               "skillsd_ray_trainer.py]", {"distill_loss": "sdl", "distill_coef": 0.001}),
    AgentEntry("rlsd", _DISTILL,
               f"RLSD: GRPO with teacher-reweighted token advantages (lambda 0.5 -> 0 over 100 updates, eps 0.2) [{_SDAR} "
               "rlsd_utils.py, rlsd_ray_trainer.py]",
               {"distill_loss": "none", "advantage_shaping": "rlsd", "warmdown_steps": 100}),
    AgentEntry("retire-opd-teacher", _DISTILL,
               "RetireOPD phase 1: the skill-conditioned teacher, GRPO with library skills in its prompts (train and "
               "eval) [arXiv 2609.20784]", {"act_skills": True, "distill_loss": "none", "teacher_prompt": "after_task"}),
    AgentEntry("retire-opd", _DISTILL,
               "RetireOPD phase 2: skill-free student, GRPO + gated OPD from the phase-1 teacher, retired adaptively "
               "(algo.teacher_model, algo.teacher_success) [arXiv 2609.20784]",
               {"teacher": "checkpoint", "retire": True, "teacher_prompt": "after_task"}),
]
