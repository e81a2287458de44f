"""The distillation family against the SDAR reference code (docs/method.md §9), value by value.

Each ``_ref_*`` function below is a transcription of the reference formula (SDAR verl/trainer/ppo/
sdar_utils.py, skillsd_utils.py, rlsd_utils.py, rlsd_ray_trainer.py) written element by element in
plain Python floats, independent of the tensor code under test; the tests compare our registered losses
and schedules with it on hand-sized inputs."""

import json
import math

import pytest
import torch

from seedbench.agents.distill import DistillConfig, RetirementState, warmdown_factor
from seedbench.agents.losses import ADVANTAGE_FNS, DuplicateAdvantageError, register_advantage
from seedbench.agents.policy_losses import (
    POLICY_LOSSES, DuplicatePolicyLossError, TokenInputs, policy_loss, register_policy_loss, rlsd_token_advantages,
)
from seedbench.agents.skill_sources import SkillDirectory, load_skill_source
from seedbench.registry import agent_entries

LOGP = [[-0.5, -1.2, -2.0], [-0.1, -3.0, -0.7]]
OLD = [[-0.6, -1.0, -2.5], [-0.1, -2.0, -0.9]]
TEACHER = [[-0.2, -1.5, -1.0], [-0.4, -0.5, -0.7]]
ADV = [0.8, -1.3]


def _t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def _flat(rows):
    return [float(v) for row in rows for v in row]


def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# -- transcriptions of the reference ------------------------------------------------------------------
def _ref_sdar_tokens(beta):  # compute_sdar_loss before agg_loss: gate * (teacher - student)
    return [[_sigmoid(beta * (t - s)) * (t - s) for s, t in zip(srow, trow)] for srow, trow in zip(LOGP, TEACHER)]


def _ref_sdl_tokens():  # compute_sdl_loss before agg_loss
    out = []
    for srow, trow, orow in zip(LOGP, TEACHER, OLD):
        row = []
        for s, t, o in zip(srow, trow, orow):
            ell = s - t
            k3 = math.exp(min(-ell, 20.0)) - 1.0 + ell
            row.append(math.exp(min(s - o, 10.0)) * k3)
        out.append(row)
    return out


def _ref_rlsd_advantages(lam, eps):  # compute_rlsd_token_advantage, student = old_log_probs
    out = []
    for a, orow, trow in zip(ADV, OLD, TEACHER):
        sign = (a > 0) - (a < 0)
        out.append([a * ((1 - lam) + lam * min(max(math.exp(sign * (t - o)), 1 - eps), 1 + eps))
                    for o, t in zip(orow, trow)])
    return out


def _ref_rlsd_lambda(step, init=0.5, warmdown=100):  # RLSDRayTrainer._get_rlsd_lambda
    if step >= warmdown:
        return 0.0
    return init * (1.0 - step / warmdown)


def _ref_ppo_dual_clip(logp, old, adv, eps=0.2, c=3.0):  # verl compute_policy_loss, per token
    ratio = math.exp(logp - old)
    loss = max(-adv * ratio, -adv * min(max(ratio, 1 - eps), 1 + eps))
    return min(loss, -adv * c) if adv < 0 else loss


# -- the tests ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("beta", [5.0, 0.0])
def test_gated_opd_is_compute_sdar_loss_per_token(beta):
    term = policy_loss("gated_opd")(TokenInputs(_t(LOGP), teacher_logp=_t(TEACHER)), beta=beta)
    assert _flat(term.tokens.tolist()) == pytest.approx(_flat(_ref_sdar_tokens(beta)), abs=1e-12)
    if beta == 0.0:  # the reference's GRPO+OPSD scripts: a constant gate of one half
        assert term.stats["gate"].tolist() == [[0.5] * 3, [0.5] * 3]


def test_gated_opd_gradient_is_minus_the_gate():
    logp = _t(LOGP).requires_grad_()
    term = policy_loss("gated_opd")(TokenInputs(logp, teacher_logp=_t(TEACHER)), beta=5.0)
    term.tokens.sum().backward()
    expected = [[-_sigmoid(5.0 * (t - s)) for s, t in zip(sr, tr)] for sr, tr in zip(LOGP, TEACHER)]
    assert _flat(logp.grad.tolist()) == pytest.approx(_flat(expected), abs=1e-12)


def test_sdl_is_compute_sdl_loss_per_token():
    term = policy_loss("sdl")(TokenInputs(_t(LOGP), old_logp=_t(OLD), teacher_logp=_t(TEACHER)))
    assert _flat(term.tokens.tolist()) == pytest.approx(_flat(_ref_sdl_tokens()), abs=1e-12)
    same = policy_loss("sdl")(TokenInputs(_t(LOGP), old_logp=_t(LOGP), teacher_logp=_t(LOGP)))
    assert same.tokens.abs().max().item() == 0.0  # k3 vanishes where teacher and student agree


@pytest.mark.parametrize("lam", [0.5, 0.25, 0.0])
def test_rlsd_token_advantages_are_compute_rlsd_token_advantage(lam):
    ours = rlsd_token_advantages(torch.tensor(ADV, dtype=torch.float64), _t(OLD), _t(TEACHER), lam, 0.2)
    assert _flat(ours.tolist()) == pytest.approx(_flat(_ref_rlsd_advantages(lam, 0.2)), abs=1e-12)
    # the reference reads A from the first valid token of a broadcast [B, L] advantage: same result
    broadcast = torch.tensor(ADV, dtype=torch.float64).unsqueeze(-1).expand(2, 3)
    shaped = rlsd_token_advantages(broadcast, _t(OLD), _t(TEACHER), lam, 0.2)
    assert _flat(shaped.tolist()) == pytest.approx(_flat(ours.tolist()))


def test_rlsd_loss_is_dual_clip_ppo_on_the_token_advantages():
    term = policy_loss("rlsd")(TokenInputs(_t(LOGP), _t(OLD), torch.tensor(ADV, dtype=torch.float64), _t(TEACHER)),
                               lam=0.5)
    adv = _ref_rlsd_advantages(0.5, 0.2)
    expected = [[_ref_ppo_dual_clip(s, o, a) for s, o, a in zip(sr, orow, ar)] for sr, orow, ar in zip(LOGP, OLD, adv)]
    assert _flat(term.tokens.tolist()) == pytest.approx(_flat(expected), abs=1e-12)


@pytest.mark.parametrize("name, params", [("ppo_clip", {}), ("dual_clip", {"clip_ratio_c": 3.0})])
def test_ppo_terms_are_compute_policy_loss(name, params):
    term = policy_loss(name)(TokenInputs(_t(LOGP), _t(OLD), torch.tensor(ADV, dtype=torch.float64)), **params)
    c = params.get("clip_ratio_c", math.inf)
    expected = [[_ref_ppo_dual_clip(s, o, a, c=c) for s, o in zip(sr, orow)] for sr, orow, a in zip(LOGP, OLD, ADV)]
    assert _flat(term.tokens.tolist()) == pytest.approx(_flat(expected), abs=1e-12)


@pytest.mark.parametrize("step", [1, 2, 50, 99, 100, 150])
def test_rlsd_warmdown_is_get_rlsd_lambda(step):
    assert 0.5 * warmdown_factor(step, 100) == pytest.approx(_ref_rlsd_lambda(step), abs=1e-15)


def test_warmdown_off_is_a_constant_as_the_skill_sd_script_sets_it():
    assert [warmdown_factor(step, -1) for step in (1, 10, 1000)] == [1.0, 1.0, 1.0]


def test_catalogue_lines_carry_the_reference_scripts_hyperparameters():
    def config(name):
        return DistillConfig(**agent_entries()[name].overrides)

    sdar, opsd, grpo_opd = config("sdar"), config("opsd"), config("grpo-opd")
    assert (sdar.distill_loss, sdar.distill_coef, sdar.gate_beta, sdar.pg_coef) == ("gated_opd", 0.01, 5.0, 1.0)
    assert (opsd.pg_coef, opsd.gate_beta, opsd.distill_coef) == (0.0, 5.0, 0.01)
    assert (grpo_opd.gate_beta, grpo_opd.pg_coef) == (0.0, 1.0)
    skill_sd, rlsd = config("skill-sd"), config("rlsd")
    assert (skill_sd.distill_loss, skill_sd.distill_coef, skill_sd.warmdown_steps) == ("sdl", 0.001, -1)
    assert (rlsd.advantage_shaping, rlsd.rlsd_lambda, rlsd.rlsd_clip_eps, rlsd.warmdown_steps, rlsd.distill_loss) == (
        "rlsd", 0.5, 0.2, 100, "none")
    assert all(config(n).kl_coef == 0.01 and config(n).teacher == "self" for n in ("sdar", "opsd", "skill-sd", "rlsd"))
    assert config("retire-opd").retire and config("retire-opd").teacher == "checkpoint"
    assert DistillConfig().skill_retrieval == "task_type" and DistillConfig().teacher_prompt == "prefix"


def test_retirement_waits_for_both_the_success_target_and_a_stalled_gap():
    state = RetirementState(fraction=0.9, patience=2)
    # gaps 0.5, 0.4 (new lows), 0.45, 0.41 (no new low twice); success passes 0.9·0.8 = 0.72 only at update 5
    steps = [(0.5, 0.9), (0.4, 0.9), (0.45, 0.5), (0.41, 0.7), (0.42, 0.75)]
    retired = [state.observe(i + 1, gap, success, 0.8) for i, (gap, success) in enumerate(steps)]
    assert retired == [False, False, False, False, True] and state.retired_at == 5
    assert state.observe(6, 0.1, 0.0, 0.8)  # retirement is final
    early = RetirementState(fraction=0.9, patience=2)
    assert [early.observe(i, g, 1.0, 0.8) for i, g in enumerate([0.5, 0.4, 0.3, 0.2], 1)] == [False] * 4  # still shrinking


def test_the_registries_refuse_a_second_registration_under_a_taken_name():
    with pytest.raises(DuplicatePolicyLossError, match="gated_opd"):
        register_policy_loss("gated_opd", "distillation", "x", ())(lambda inputs: None)
    with pytest.raises(DuplicateAdvantageError, match="step"):
        register_advantage("step")(lambda *a, **k: None)
    assert set(POLICY_LOSSES) >= {"ppo_clip", "dual_clip", "gated_opd", "sdl", "rlsd"} and "step" in ADVANTAGE_FNS
    with pytest.raises(ValueError, match="needs teacher_logp"):
        policy_loss("gated_opd")(TokenInputs(_t(LOGP)))


# -- skill retrieval (the reference's SkillProvider, with its ALFWorld fix) ---------------------------
def _skill_dir(tmp_path):
    files = {"general_skills": "general.md", "pick_and_place": "pick.md", "heat": "heat.md", "look": "look.md"}
    for name, filename in files.items():
        (tmp_path / filename).write_text(f"{name.upper()} SKILLS\n")
    mapping = {"skill_files": files,
               "task_to_skill": {"pick_and_place": "pick_and_place", "pick_two_obj_and_place": "pick_and_place",
                                 "look_at_obj_in_light": "look", "pick_heat_then_place_in_recep": "heat"},
               "task_keywords": {"look_at_obj_in_light": ["look at", "light"], "pick_heat_then_place_in_recep": ["heat"],
                                 "pick_and_place": ["put"]}}
    (tmp_path / "skill_mapping.json").write_text(json.dumps(mapping))
    return tmp_path


def test_task_type_retrieval_matches_the_game_name_first_then_any_keyword(tmp_path):
    skills = load_skill_source(_skill_dir(tmp_path))
    assert isinstance(skills, SkillDirectory)
    text, info = skills.skill_for("pick_heat_then_place_in_recep-Egg-None-Microwave-5", "heat some egg", "")
    assert text == "GENERAL_SKILLS SKILLS\n\nHEAT SKILLS" and info["matched_by"] == "task_id"
    text, info = skills.skill_for("pick_and_place_simple-Apple-None-Fridge-1", "", "")
    assert text.endswith("PICK_AND_PLACE SKILLS") and info["skill_types"] == ["pick_and_place"]
    # no game name: every task type with any keyword in the prompt, general skills once
    text, info = skills.skill_for("", "", "Your task is to: heat some egg and put it in the microwave.")
    assert info["skill_types"] == ["pick_heat_then_place_in_recep", "pick_and_place"]
    assert text == "GENERAL_SKILLS SKILLS\n\nHEAT SKILLS\n\nPICK_AND_PLACE SKILLS"
    assert skills.skill_for("", "", "go north")[0] == "GENERAL_SKILLS SKILLS"


def test_general_only_reproduces_the_reference_before_its_alfworld_fix(tmp_path):
    before = load_skill_source(_skill_dir(tmp_path), retrieval="general_only")
    assert before.skill_for("pick_heat_then_place_in_recep-Egg-None-Microwave-5", "", "heat some egg")[0] == \
        "GENERAL_SKILLS SKILLS"
    every = load_skill_source(_skill_dir(tmp_path), skill_all=True)
    assert every.skill_for("", "", "")[0].split("\n\n") == ["GENERAL_SKILLS SKILLS", "PICK_AND_PLACE SKILLS",
                                                             "HEAT SKILLS", "LOOK SKILLS"]
