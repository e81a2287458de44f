"""The closing screen of `seedbench run` (`seedbench.report.run_screen`): what it reads from a run directory
and the sentence it chooses for each kind of interval."""

import json

from seedbench.cli import main
from seedbench.report.run_screen import chosen_skills, closing_screen, what_it_shows


def _result(low, high, tasks=16):
    return {"split": "test", "tasks": tasks, "iterations": [0, 2], "before": 0.375, "after": 0.5,
            "difference": 0.125, "ci95": [low, high]}


def test_the_sentence_follows_the_interval():
    assert what_it_shows(_result(-0.062, 0.25)).startswith("The interval includes 0: at this size (16 held-out")
    assert what_it_shows(_result(0.062, 0.25)).startswith("The interval is above 0: on these 16")
    assert what_it_shows(_result(-0.3, -0.1)).startswith("The interval is below 0")
    assert "one training seed" in what_it_shows(_result(0.062, 0.25))


def test_an_interval_off_0_between_evaluations_of_fresh_streams_claims_nothing(tmp_path):
    """Without ``eval.same_stream`` the frozen control of the learning recipe's seed 1 rose +0.125 [+0.031,
    +0.250] on 32 maps: the screen must not call such an interval an improvement, whichever side of 0 it is."""
    for interval in ((0.031, 0.25), (-0.25, -0.031)):
        sentence = what_it_shows(_result(*interval), fresh_streams=True)
        assert sentence.startswith("The interval excludes 0, but it counts only which 16 tasks were drawn")
        assert "improved" not in sentence and "worse" not in sentence
    assert what_it_shows(_result(-0.062, 0.25), fresh_streams=True).startswith("The interval includes 0")
    for same_stream, opening in ((False, "The interval excludes 0, but"), (True, "The interval is above 0")):
        summary = {"agent": "seed", "env": "e", "before_after": [_result(0.031, 0.25)],
                   "protocol": {"eval_same_stream": same_stream}}
        (tmp_path / "summary.json").write_text(json.dumps(summary))
        assert opening in closing_screen(tmp_path)


def _skill(iteration, won, text, ok=True):
    return {"iteration": iteration, "won": won, "ok": ok, "episode_skill": text, "task": f"train/{iteration}"}


def test_skills_come_from_the_last_update_one_won_and_one_lost():
    rows = [_skill(1, True, "old won"), _skill(2, False, "lost one"), _skill(2, False, "lost two"),
            _skill(2, True, None, ok=False), _skill(2, True, "won one")]
    assert [r["episode_skill"] for r in chosen_skills(rows)] == ["won one", "lost one"]
    assert chosen_skills([]) == []


def test_the_screen_names_numbers_skills_report_and_viewer(tmp_path):
    summary = {"agent": "seed", "env": "frozenlake-neighbours", "before_after": [_result(-0.062, 0.25)]}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "skills.jsonl").write_text(json.dumps(_skill(2, True, "Workflow that worked: down, right.")) + "\n")
    screen = closing_screen(tmp_path, tmp_path / "report" / "report.html")
    assert "Held-out success on test (16 tasks): 0.375 -> 0.500, difference +0.125, 95% CI [-0.062, +0.250]" in screen
    assert "The interval includes 0" in screen
    assert "  > Workflow that worked: down, right." in screen
    assert f"Report with plots: {tmp_path / 'report' / 'report.html'}" in screen
    assert f"seedbench view {tmp_path}" in screen


def test_a_run_with_report_true_ends_with_the_screen_and_its_report(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--env", "choice", "--agent", "grpo", "--model", "tiny", "--iterations", "1", "--output",
                 str(out), "--set", "rollout.max_new_tokens=3", "rollout.tasks_per_batch=1", "rollout.group_size=2",
                 "eval.num_tasks=4", "save_final_model=false", "report=true"]) == 0
    printed = capsys.readouterr().out
    assert (out / "report" / "report.html").exists() and list((out / "report" / "plots").glob("*.png"))
    assert f"Report with plots: {out / 'report' / 'report.html'}" in printed
    assert "Held-out success on test (4 tasks):" in printed and f"seedbench view {out}" in printed


def test_analyses_that_never_parsed_are_said_with_one_raw_answer(tmp_path):
    (tmp_path / "skills.jsonl").write_text(json.dumps({"iteration": 1, "ok": False, "episode_skill": None,
                                                       "raw": '{"episode_summary": "Go down."'}) + "\n")
    screen = closing_screen(tmp_path)
    assert "None of the policy's 1 self-analyses parsed into a skill" in screen and 'Go down.' in screen
