"""Reports from synthetic run directories written in the run-directory contract."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import math
import pytest

import seedbench.report
from seedbench import stats
from seedbench.report import synthetic, tables
from seedbench.report.data import read_runs

ALFWORLD_TYPES = ("pick", "look", "clean", "heat", "cool", "pick2")


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for agent in ("grpo", "seed"):
        for seed in range(3):
            synthetic.write_run(root / f"alfworld__{agent}__s{seed}", env="alfworld", agent=agent, seed=seed,
                                iterations=10, splits=("valid_seen", "valid_unseen"), task_types=ALFWORLD_TYPES,
                                num_tasks=40)
    synthetic.write_run(root / "alfworld__grpo__s9", env="alfworld", agent="grpo", seed=9, iterations=10,
                        splits=("valid_seen", "valid_unseen"), task_types=ALFWORLD_TYPES, num_tasks=40, stop_after=3)
    return root


@pytest.fixture(scope="module")
def report_dir(runs_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report")
    seedbench.report.build_report([runs_dir], out)
    return out


def test_load_results_is_one_tidy_table(runs_dir):
    df = seedbench.report.load_results(runs_dir)
    assert list(df.columns) == ["run", "env", "agent", "arm", "model", "seed", "iteration", "trajectories", "env_steps",
                                "generated_tokens", "metric", "value"]
    assert set(df.agent) == {"grpo", "seed"} and set(df.seed) == {0, 1, 2, 9}
    metrics = set(df.metric)
    assert {"rollout/success", "eval/valid_seen/success_micro", "eval/valid_unseen/success_macro",
            "eval/valid_seen/success/pick", "eval/valid_seen/count/pick", "seed/gate_mean"} <= metrics
    final = df[(df.metric == "eval/valid_seen/success_micro") & (df.run == "alfworld__seed__s0")]
    assert final.iteration.max() == 10
    summary = json.loads((runs_dir / "alfworld__seed__s0" / "summary.json").read_text())
    assert final.sort_values("iteration").value.iloc[-1] == summary["final"]["eval/valid_seen/success_micro"]


def test_results_csv_round_trips(runs_dir, report_dir):
    direct = seedbench.report.load_results(runs_dir)
    loaded = seedbench.report.load_results(report_dir / "results.csv")
    assert list(loaded.columns) == list(direct.columns)
    assert len(loaded) == len(direct)
    assert np.allclose(loaded.value.to_numpy(), direct.value.to_numpy())
    assert loaded.trajectories.dtype == direct.trajectories.dtype


def test_readers_skip_a_torn_line_and_repeated_iterations(tmp_path):
    run = synthetic.write_run(tmp_path / "r", iterations=4)
    lines = (run / "metrics.jsonl").read_text().splitlines()
    # a resumed run repeating iteration 2, then a line torn by a kill
    (run / "metrics.jsonl").write_text("\n".join(lines[:2] + [lines[1].replace('"train/loss": ', '"train/loss": 9.0, "x": ')] + lines[2:]) + '\n{"iteration": 5, "traj')
    loaded = read_runs(tmp_path)[0]
    assert [m["iteration"] for m in loaded.metrics] == [1, 2, 3, 4]
    assert loaded.metrics[1].get("x") is not None  # the later record of iteration 2 wins


def test_final_table_matches_a_hand_computation(runs_dir):
    runs = [r for r in read_runs(runs_dir) if r.complete]
    table = tables.final_table(runs, n_resamples=500)
    seed_row = table[table.agent == "seed"].iloc[0]
    finals = [json.loads((runs_dir / f"alfworld__seed__s{s}" / "summary.json").read_text())["final"] for s in range(3)]
    assert seed_row.micro_mean == pytest.approx(np.mean([f["eval/valid_seen/success_micro"] for f in finals]))
    assert seed_row.macro_mean == pytest.approx(np.mean([f["eval/valid_seen/success_macro"] for f in finals]))
    assert seed_row.split == "valid_seen" and seed_row.seeds == 3
    assert seed_row.micro_low <= seed_row.micro_mean <= seed_row.micro_high
    grpo_row = table[table.agent == "grpo"].iloc[0]
    assert np.isnan(grpo_row.poi)  # the baseline is not compared with itself
    assert 0.5 < seed_row.poi <= 1.0  # the synthetic SEED is better


def test_per_type_table_has_macro_and_micro(runs_dir):
    runs = [r for r in read_runs(runs_dir) if r.complete]
    per_type = tables.per_type_table(runs, "valid_seen")
    row = per_type[per_type.agent == "seed"].iloc[0]
    types = [c for c in per_type.columns if c.startswith("type:")]
    assert len(types) == 6
    counts = np.array([row[f"n:{t[5:]}"] for t in types])
    assert counts.sum() == 40 and len(set(counts)) > 1  # skewed counts: micro and macro differ
    assert row["macro"] != pytest.approx(row["micro"])


def test_generalization_table_puts_splits_side_by_side(runs_dir):
    runs = [r for r in read_runs(runs_dir) if r.complete]
    gen = tables.generalization_table(runs, n_resamples=500)
    assert {"valid_seen:micro", "valid_unseen:micro", "gap:valid_unseen"} <= set(gen.columns)
    row = gen[gen.agent == "seed"].iloc[0]
    assert row["gap:valid_unseen"] == pytest.approx(row["valid_seen:micro"] - row["valid_unseen:micro"])


def test_report_files(report_dir):
    md = (report_dir / "report.md").read_text()
    html = (report_dir / "report.html").read_text()
    for section in ("Learning curves", "Final performance", "Sample efficiency", "Generalization", "SEED diagnostics",
                    "Protocol cards", "Compute", "Run manifest"):
        assert f"## {section}" in md and section in html
    assert "incomplete run(s) excluded" in md and "alfworld__grpo__s9" in md
    assert "macro success" in md and "micro success" in md and "P(agent > grpo)" in md
    assert "Example skills of `seed`" in md
    for name in ("learning_curves_alfworld__tiny.png", "sample_efficiency_alfworld__tiny.png",
                 "seed_diagnostics_alfworld__tiny.png"):
        assert (report_dir / "plots" / name).is_file() and f"plots/{name}" in md
    # self-contained: figures inline, nothing fetched from elsewhere
    assert html.count("data:image/png;base64,") == 3
    assert "src=\"http" not in html and "<script" not in html and "<link" not in html


def test_report_is_deterministic(runs_dir, report_dir, tmp_path):
    seedbench.report.build_report([runs_dir], tmp_path)
    for name in ("report.md", "report.html", "results.csv"):
        assert (tmp_path / name).read_bytes() == (report_dir / name).read_bytes(), name


def test_report_warns_about_different_task_lists(runs_dir, tmp_path):
    copy = tmp_path / "runs"
    shutil.copytree(runs_dir, copy)
    summary_path = copy / "alfworld__seed__s1" / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["eval_task_hash"]["valid_seen"] = "0000000000000000"
    summary_path.write_text(json.dumps(summary))
    seedbench.report.build_report([copy], tmp_path / "out", plots=False, n_resamples=200)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "different task lists" in md and "seed/s1" in md


def test_report_cli_errors_are_one_line(tmp_path, capsys):
    assert seedbench.report.main([str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    out = capsys.readouterr().out.strip()
    assert out.startswith("error: ") and "\n" not in out
    synthetic.write_run(tmp_path / "partial", stop_after=1, iterations=3)
    assert seedbench.report.main([str(tmp_path / "partial"), "--out", str(tmp_path / "o")]) == 2
    assert "--include-incomplete" in capsys.readouterr().out
    assert seedbench.report.main([str(tmp_path / "partial"), "--out", str(tmp_path / "o"), "--include-incomplete",
                                  "--no-plots"]) == 0


def test_importing_report_does_not_load_matplotlib_or_pandas():
    code = "import sys, seedbench.report; print(any(m in sys.modules for m in ('matplotlib', 'pandas')))"
    out = subprocess.run([__import__("sys").executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ----------------------------------------------------------------------------------------------------
# The HTML renders in a real browser


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def screenshot(html: Path, png: Path) -> np.ndarray:
    """Render ``html`` with headless Chromium and return the screenshot as an RGB(A) array."""
    import matplotlib.image

    cmd = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", "--hide-scrollbars",
           "--window-size=1280,2000", f"--screenshot={png}", html.resolve().as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=180, check=False)
    assert png.is_file(), "chromium wrote no screenshot"
    return matplotlib.image.imread(png)


def assert_not_blank(pixels: np.ndarray) -> None:
    gray = pixels[..., :3].mean(axis=-1)
    assert gray.std() > 0.05, f"screenshot looks blank (pixel std {gray.std():.4f})"
    # the plot colours are there, not only black text on white
    colourful = (pixels[..., :3].max(axis=-1) - pixels[..., :3].min(axis=-1)) > 0.3
    assert colourful.mean() > 0.001


@pytest.mark.skipif(chromium() is None, reason="chromium not installed (apt-get install -y chromium)")
def test_report_html_renders_in_headless_chromium(report_dir, tmp_path):
    assert_not_blank(screenshot(report_dir / "report.html", tmp_path / "shot.png"))


def test_paired_difference_interval_keeps_each_task_pair_together():
    from seedbench.stats import paired_difference_ci

    # every task improves by exactly 1/4 on average: pairs (0,1) and (1,1) twice each
    same = paired_difference_ci([0, 1, 0, 1], [1, 1, 1, 1])
    assert same.point == pytest.approx(0.5) and same.n == 4
    # an unpaired bootstrap would put mass below 0; a paired one cannot (no task got worse)
    assert same.low >= 0 and same.high <= 1
    # identical outcomes: a zero-width interval at 0; one task: no interval
    flat = paired_difference_ci([1, 0, 1], [1, 0, 1])
    assert (flat.point, flat.low, flat.high) == (0, 0, 0)
    one = paired_difference_ci([0], [1])
    assert one.point == 1 and math.isnan(one.low)
    with pytest.raises(ValueError, match="one value per task"):
        paired_difference_ci([0, 1], [1])


# ----------------------------------------------------------------------------------------------------
# A study: arms with labels (GRPO, a no-learning GRPO control, SEED, a SEED ablation), a generalization split

STUDY_ARMS = {"grpo": ("grpo", {}), "control": ("grpo", {"optim.lr": 0}), "seed": ("seed", {}),
              "seed-no-opd": ("seed", {"algo.opd_coef": 0})}
STUDY_FINAL = {"grpo": 0.55, "control": synthetic.NO_LEARNING, "seed": 0.8, "seed-no-opd": 0.7}


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory) -> Path:
    from seedbench.training.experiments.arm import write_arm

    root = tmp_path_factory.mktemp("study")
    for arm, (agent, overrides) in STUDY_ARMS.items():
        for seed in range(4):
            run = root / f"frozenlake__{arm}__tiny__s{seed}"
            write_arm(run, arm, agent, "study", overrides)
            synthetic.write_run(run, env="frozenlake", agent=agent, seed=seed, iterations=6, eval_every=2,
                                splits=("test", "test_large"), num_tasks=20, final_success=STUDY_FINAL[arm])
    return root


def _final(run_dir: Path, split: str = "test") -> float:
    records = [json.loads(line) for line in (run_dir / "eval.jsonl").read_text().splitlines()]
    return [r for r in records if r["split"] == split][-1]["success_micro"]


def test_study_groups_by_arm_and_recognises_the_control(study_dir):
    runs = read_runs(study_dir)
    groups = tables.group_runs(runs)
    assert list(groups[("frozenlake", "tiny")]) == ["control", "grpo", "seed", "seed-no-opd"]
    assert all(len(rs) == 4 for rs in groups[("frozenlake", "tiny")].values())
    arms = {r["arm"]: r for r in tables.arms_table(runs)}
    assert arms["control"]["agents"] == ["grpo"] and arms["control"]["set"] == {"optim.lr": 0}
    assert [a for a, r in arms.items() if r["control"]] == ["control"]
    grpo_runs = groups[("frozenlake", "tiny")]["grpo"]
    for run in grpo_runs:  # an arm of another name is a control when its runs were started with lr 0
        run.arm_set = {"optim.lr": 0.0}
    assert tables.is_control("frozen", grpo_runs) and not tables.is_control("grpo", [])


def test_study_learning_curves_are_means_over_seeds_per_iteration(study_dir):
    runs = read_runs(study_dir)
    curves = tables.learning_curve_table(runs, "test", n_resamples=200)
    seed = curves[curves.agent == "seed"]
    assert list(seed.iteration) == [0, 2, 4, 6] and set(seed.seeds) == {4}
    last = seed[seed.iteration == 6].iloc[0]
    by_hand = np.mean([_final(study_dir / f"frozenlake__seed__tiny__s{s}") for s in range(4)])
    assert last["mean"] == pytest.approx(by_hand) and last["low"] <= by_hand <= last["high"]
    control = curves[curves.agent == "control"]
    assert control["mean"].max() < 0.3 < seed["mean"].iloc[-1]  # the control does not learn; SEED does


def test_study_final_table_iqm_and_probability_of_improvement_by_hand(study_dir):
    runs = read_runs(study_dir)
    table = tables.final_table(runs, baseline="grpo", n_resamples=500).set_index("agent")
    seed = [_final(study_dir / f"frozenlake__seed__tiny__s{s}") for s in range(4)]
    grpo = [_final(study_dir / f"frozenlake__grpo__tiny__s{s}") for s in range(4)]
    assert table.loc["seed", "micro_mean"] == pytest.approx(np.mean(seed))
    assert table.loc["seed", "micro_iqm"] == pytest.approx(np.mean(sorted(seed)[1:3]))  # 4 seeds: middle two
    assert table.loc["seed", "micro_iqm_low"] <= table.loc["seed", "micro_iqm"] <= table.loc["seed", "micro_iqm_high"]
    pairs = [1.0 if a > b else 0.5 if a == b else 0.0 for a in seed for b in grpo]
    assert table.loc["seed", "poi"] == pytest.approx(np.mean(pairs))
    assert table.loc["seed", "poi_low"] <= table.loc["seed", "poi"] <= table.loc["seed", "poi_high"]
    assert table.loc["control", "poi"] == pytest.approx(0.0)  # every GRPO seed beats every control seed
    assert math.isnan(table.loc["grpo", "poi"])


def test_study_generalization_split_is_reported_apart(study_dir):
    runs = read_runs(study_dir)
    gen = tables.generalization_table(runs, n_resamples=200).set_index("agent")
    large = [_final(study_dir / f"frozenlake__seed-no-opd__tiny__s{s}", "test_large") for s in range(4)]
    test = [_final(study_dir / f"frozenlake__seed-no-opd__tiny__s{s}") for s in range(4)]
    assert gen.loc["seed-no-opd", "test_large:micro"] == pytest.approx(np.mean(large))
    assert gen.loc["seed-no-opd", "gap:test_large"] == pytest.approx(np.mean(np.subtract(test, large)))


def test_skill_duplicate_share_by_hand(tmp_path):
    run_dir = synthetic.write_run(tmp_path / "r", agent="grpo", iterations=1)
    skills = [{"iteration": 1, "parsed": True, "skill": "Check the goal first."},
              {"iteration": 1, "parsed": True, "skill": "check  the goal FIRST."},  # same skill, other spelling
              {"iteration": 2, "parsed": True, "skill": "Avoid holes."},
              {"iteration": 2, "parsed": True, "skill": "Check the goal first."},
              {"iteration": 2, "parsed": False, "skill": ""}]  # a failed analysis is not a skill
    (run_dir / "skills.jsonl").write_text("".join(json.dumps(s) + "\n" for s in skills))
    assert tables.skill_duplicates(read_runs(tmp_path)) == {"skills": 4, "distinct": 2, "duplicate_share": 0.5}
    assert math.isnan(tables.skill_duplicates([])["duplicate_share"])


def test_example_skills_quote_each_text_once(tmp_path):
    run_dir = synthetic.write_run(tmp_path / "r", agent="seed", iterations=2)
    skills = [{"iteration": 2, "parsed": True, "won": True, "skill": "Go right twice."},
              {"iteration": 2, "parsed": True, "won": True, "skill": "go right  TWICE."},  # the same text again
              {"iteration": 2, "parsed": True, "won": True, "skill": "Go down first."},
              {"iteration": 2, "parsed": True, "won": False, "skill": "Avoid the hole."},
              {"iteration": 2, "parsed": True, "won": False, "skill": "Avoid the hole."},
              {"iteration": 1, "parsed": True, "won": False, "skill": "An earlier iteration."}]
    (run_dir / "skills.jsonl").write_text("".join(json.dumps(s) + "\n" for s in skills))
    quoted = [(e["won"], e["skill"]) for e in tables.example_skills(read_runs(tmp_path))]
    assert quoted == [(True, "Go right twice."), (True, "Go down first."), (False, "Avoid the hole.")]


def test_study_time_per_phase_by_hand(study_dir):
    rows = {r["agent"]: r for r in tables.phase_time_rows(read_runs(study_dir))}
    grpo, seed = rows["grpo"]["seconds"], rows["seed"]["seconds"]
    # synthetic.PHASE_SECONDS: rollout 2, prepare 0.1, update 1 → 3.1 s per iteration, 6 iterations
    assert (grpo["rollout"], grpo["prepare"], grpo["update"], grpo["iteration"]) == pytest.approx((2.0, 0.1, 1.0, 3.1))
    assert rows["grpo"]["total_s"] == pytest.approx(18.6) and rows["grpo"]["runs"] == 4
    assert rows["grpo"]["iterations"] == 6 and rows["grpo"]["env"] == "frozenlake" and math.isnan(grpo["analysis"])
    # SEED's prepare holds analysis 0.5 + rescore 0.25
    assert (seed["analysis"], seed["rescore"], seed["prepare"]) == pytest.approx((0.5, 0.25, 0.85))
    assert seed["iteration"] == pytest.approx(3.85) and rows["seed"]["total_s"] == pytest.approx(23.1)


def test_paired_difference_against_the_baseline_by_hand(study_dir):
    """Each arm minus the baseline run of the same seed, averaged over the seeds both have; a seed the
    baseline lacks is left out, and the counts say how many seeds ended above, level and below."""
    runs = [r for r in read_runs(study_dir) if not (r.arm == "grpo" and r.seed == 3)]
    table = tables.paired_baseline_table(runs, baseline="grpo", n_resamples=300)
    assert "grpo" not in set(table.agent) and set(table.split) == {"test", "test_large"}
    for arm in ("seed", "control"):
        for split in ("test", "test_large"):
            diffs = [_final(study_dir / f"frozenlake__{arm}__tiny__s{s}", split)
                     - _final(study_dir / f"frozenlake__grpo__tiny__s{s}", split) for s in range(3)]
            row = table[(table.agent == arm) & (table.split == split)].iloc[0]
            assert row["seeds"] == 3 and row["diff_mean"] == pytest.approx(np.mean(diffs))
            assert row["diff_low"] <= row["diff_mean"] <= row["diff_high"]
            assert (row["above"], row["level"], row["below"]) == (
                sum(d > 0 for d in diffs), sum(d == 0 for d in diffs), sum(d < 0 for d in diffs))
            assert row["p_sign_flip"] == pytest.approx(stats.sign_flip_p(diffs))
            finals = [_final(study_dir / f"frozenlake__{arm}__tiny__s{s}", split) for s in range(4)]
            base_finals = [_final(study_dir / f"frozenlake__grpo__tiny__s{s}", split) for s in range(3)]  # s3 left out
            assert row["p_permutation"] == pytest.approx(stats.permutation_p(finals, base_finals))
    control = table[(table.agent == "control") & (table.split == "test")].iloc[0]
    assert control["below"] == 3 and control["diff_high"] < 0  # GRPO learns, the control does not
    assert not len(tables.paired_baseline_table(runs, baseline="gigpo"))  # no such baseline: no rows


def test_change_from_the_start_by_hand(study_dir):
    """Each run's change is its own summary's before/after (first vs last evaluation, same tasks); an arm's
    row is the mean over seeds, and a run counts as up or down only when its paired interval leaves 0."""
    runs = read_runs(study_dir)
    rows = [r for r in tables.change_rows(runs) if r["agent"] == "seed" and r["split"] == "test"]
    assert [r["seed"] for r in rows] == [0, 1, 2, 3]
    for row in rows:
        records = [json.loads(line) for line in (study_dir / row["run"] / "eval.jsonl").read_text().splitlines()]
        first, last = [r for r in records if r["split"] == "test"][0], [r for r in records if r["split"] == "test"][-1]
        assert (row["before"], row["after"]) == (first["success_micro"], last["success_micro"])
        assert row["change"] == pytest.approx(last["success_micro"] - first["success_micro"])
        assert row["direction"] == ("up" if row["low"] > 0 else "down" if row["high"] < 0 else "level")
    table = tables.change_table(tables.change_rows(runs), n_resamples=200)
    seed = table[(table.agent == "seed") & (table.split == "test")].iloc[0]
    assert seed["change_mean"] == pytest.approx(np.mean([r["change"] for r in rows]))
    assert seed["change_low"] <= seed["change_mean"] <= seed["change_high"]
    assert seed["up"] + seed["level"] + seed["down"] == 4 and seed["up"] == sum(r["low"] > 0 for r in rows)
    assert tables.fmt_points(0.0625, 0.0, 0.15625) == "+6.2 [+0.0, +15.6]"
    assert tables.fmt_points(-0.03125, math.nan, math.nan) == "-3.1 [n/a]"


def test_study_report_has_every_section(study_dir, tmp_path):
    files = seedbench.report.build_report([study_dir], tmp_path, n_resamples=200)
    md = files.markdown.read_text()
    assert "| frozenlake | tiny | `control` | grpo | optim.lr=0 | 0, 1, 2, 3 | yes |" in md  # arms in the overview
    assert "| `seed-no-opd` | seed | algo.opd_coef=0 |" in md
    learning = md.split("## Learning curves")[1].split("## Final performance")[0]
    assert "| agent | it 0 | it 2 | it 4 | it 6 |" in learning and "| control | 10.0 |" in learning
    assert (tmp_path / "plots" / "learning_curves_frozenlake__tiny.png").is_file()
    final = md.split("## Final performance")[1].split("## Change from the start")[0]
    assert "micro IQM % [95% CI]" in final and "P(agent > grpo) [95% CI]" in final
    paired = md.split("## Against grpo, seed by seed")[1].split("## Change from the start")[0]
    assert ("| agent | split | seeds paired | agent − grpo, pts [95% CI over seeds] | sign-flip p | permutation p | "
            "seeds above / level / below |") in paired
    assert "| 0.125 | 0.0571 | 4 / 0 / 0 |" in paired  # four seeds all above: 2 / 2^4; unpaired 4 of C(8, 4) = 70
    assert "| seed | `test_large` | 4 |" in paired and "| control | `test` | 4 |" in paired
    change = md.split("## Change from the start")[1].split("## Sample efficiency")[0]
    assert "*split `test`, per arm*" in change and "*split `test_large`, per run*" in change
    assert "| agent | seed | before → after % | change, pts [95% CI over tasks] | tasks |" in change
    assert "| seed-no-opd | 4 |" in final
    gen = md.split("## Generalization")[1].split("## SEED diagnostics")[0]
    assert "test\\_large micro % [95% CI]" in gen or "test_large micro % [95% CI]" in gen
    seed = md.split("## SEED diagnostics")[1].split("## Protocol cards")[0]
    assert "| seed | analysis success |" in seed and "| seed-no-opd | analysis success |" in seed
    assert "| agent | parsed skills | distinct | duplicate share % |" in seed
    assert "Example skills of `seed`" in seed and "Example skills of `seed-no-opd`" in seed
    compute = md.split("## Compute")[1].split("## Run manifest")[0]
    assert "| frozenlake | tiny | seed | 4 | 6 | 2.00 | 1.50 | 0.25 | 0.85 | 0.50 | 0.25 | 1.00 | 3.85 | 23.10 |" in compute
    assert "| frozenlake | tiny | grpo | 4 | 6 | 2.00 | 1.50 | 0.25 | 0.10 | – | – | 1.00 | 3.10 | 18.60 |" in compute


def test_control_curve_is_drawn_grey(study_dir):
    import matplotlib.image
    import io

    from seedbench.report import plots

    runs = read_runs(study_dir)
    curves = {"test": tables.learning_curve_table(runs, "test", n_resamples=100)}
    colors = plots.agent_colors(["control", "grpo", "seed", "seed-no-opd"])

    def grey_pixels(controls):
        pixels = matplotlib.image.imread(io.BytesIO(plots.learning_curves(curves, ["test"], "t", controls, colors)))
        return int((np.abs(pixels[..., :3] - 127 / 255) < 0.02).all(axis=-1).sum())

    assert grey_pixels({"control"}) > grey_pixels(set()) + 200


def test_report_cli_marks_named_arms_as_controls(study_dir, tmp_path):
    assert seedbench.report.main([str(study_dir), "--out", str(tmp_path), "--no-plots", "--resamples", "50",
                                  "--control", "seed-no-opd"]) == 0
    md = (tmp_path / "report.md").read_text()
    assert "| frozenlake | tiny | `seed-no-opd` | seed | algo.opd_coef=0 | 0, 1, 2, 3 | yes |" in md
    assert "| frozenlake | tiny | `grpo` | grpo | – | 0, 1, 2, 3 | no |" in md
    assert "| seed-no-opd (control) |" in md


def test_archive_keeps_what_the_report_reads_and_rebuilds_the_same_tables(study_dir, tmp_path):
    """The archive holds the report's logs of complete runs only (no checkpoint, no unfinished run), and the
    report's tables built from the archive equal those built from the run directories."""
    from seedbench.report.archive import archive_run_logs
    from seedbench.report.data import results_frame

    source = tmp_path / "runs"
    shutil.copytree(study_dir, source)
    seed_run = source / "frozenlake__seed__tiny__s0"
    (seed_run / "final_model").mkdir()
    (seed_run / "final_model" / "model.safetensors").write_bytes(b"\0" * 1024)
    episodes = [{"iteration": 0, "phase": "eval/test", "task_id": "test:1", "won": True, "truncated": False,
                 "num_invalid": 0, "steps": [{"action": "a"}, {"action": "b"}], "task_text": "long text"},
                {"iteration": 1, "phase": "train", "task_id": "train:5", "won": False, "steps": []},
                {"iteration": 6, "phase": "eval/test_large", "task_id": "test_large:2", "won": False,
                 "truncated": True, "num_invalid": 3, "steps": [{}] * 12}]
    (seed_run / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    synthetic.write_run(source / "frozenlake__grpo__tiny__s7", env="frozenlake", stop_after=2, iterations=6)

    result = archive_run_logs([source], tmp_path / "archive")

    assert len(result.copied) == 16 and result.skipped == ["frozenlake__grpo__tiny__s7"]
    kept = sorted(p.name for p in (tmp_path / "archive" / "frozenlake__seed__tiny__s0").iterdir())
    assert kept == ["arm.json", "config.yaml", "eval.jsonl", "eval_episodes.jsonl", "metrics.jsonl", "skills.jsonl",
                    "summary.json"]
    slim = [json.loads(line) for line in (tmp_path / "archive" / "frozenlake__seed__tiny__s0" /
                                          "eval_episodes.jsonl").read_text().splitlines()]
    assert [(e["phase"], e["iteration"], e["won"], e["truncated"], e["num_invalid"], e["steps"]) for e in slim] == [
        ("eval/test", 0, True, False, 0, 2), ("eval/test_large", 6, False, True, 3, 12)]  # no training episode
    assert "task_text" not in slim[0]
    assert not (tmp_path / "archive" / "frozenlake__grpo__tiny__s0" / "eval_episodes.jsonl").exists()  # none to cut
    complete = [r for r in read_runs(source) if r.complete]
    from_archive = read_runs(tmp_path / "archive")
    assert [(r.arm, r.seed) for r in from_archive] == [(r.arm, r.seed) for r in complete]
    assert results_frame(from_archive).equals(results_frame(complete))
    assert archive_run_logs([source], tmp_path / "archive").copied == result.copied  # again: same files


def test_report_cli_archive_flag(study_dir, tmp_path, capsys):
    assert seedbench.report.main([str(study_dir), "--out", str(tmp_path / "r"), "--no-plots",
                                  "--archive", str(tmp_path / "a")]) == 0
    assert "archived 16 complete run(s)" in capsys.readouterr().out
    assert seedbench.report.main([str(tmp_path / "a"), "--out", str(tmp_path / "r2"), "--no-plots"]) == 0
    assert (tmp_path / "r" / "report.md").read_text() == (tmp_path / "r2" / "report.md").read_text()


def _protocol_run(arm: str, seed: int, iterations: int, lr: float):
    from seedbench.report.data import Run
    return Run(run=f"{arm}{seed}", path=Path(f"{arm}{seed}"), env="e", agent="seed", model="m", seed=seed,
               complete=True, iterations_done=iterations, arm=arm,
               config={"iterations": iterations, "optim": {"lr": lr}})


def test_frozen_weight_controls_keep_their_number_of_updates_apart_from_the_trained_runs():
    """A control whose weights cannot move (lr 0, or no updates) may run fewer updates than the trained arms
    without the card reporting a disagreement; two trained runs that differ still show both counts."""
    runs = [_protocol_run("seed", 0, 16, 2.5e-6), _protocol_run("seed", 1, 16, 2.5e-6),
            _protocol_run("control", 0, 1, 0.0), _protocol_run("control", 1, 0, 2.5e-6)]
    fields = tables.protocol_cards(runs)[0]["fields"]
    assert fields["iterations"] == ["16"]
    assert fields[tables.FROZEN_ITERATIONS] == ["1", "0"]
    assert tables.protocol_cards(runs + [_protocol_run("seed", 2, 8, 2.5e-6)])[0]["fields"]["iterations"] == ["16", "8"]
