"""The analyzer prompt (docs/method.md §4) and the lenient parsing of its JSON answer."""

import json

import pytest

from seedbench.agents.seed.analysis import (SCHEMA, Analysis, EpisodeStep, build_analyzer_content, fit_analyzer_content,
                                       parse_analysis)
from seedbench.agents.seed.skill_library import SkillEntry, SkillLibrary

STEPS = [EpisodeStep("room A", "<think>go</think><action>up</action>", True),
         EpisodeStep("room B", "I will dance", False)]


@pytest.mark.parametrize("text", [
    '{"episode_summary": "went up", "episode_skill": "Push up first."}',
    'Sure! Here it is:\n```json\n{"episode_summary": "went up", "episode_skill": "Push up first."}\n```\nDone.',
    '{"episode_summary": "went up", "episode_skill": "Push up first.",}',
    "{'episode_summary': 'went up', 'episode_skill': 'Push up first.'}",
    '<think>the agent {maybe} failed</think>{"episode_summary": "went up", "episode_skill": "Push up first."}',
    '```\n{"Episode_Summary": "went up",\n "EPISODE_SKILL": "Push up first.",\n}\n```',
])
def test_lenient_parsing_accepts_common_answer_shapes(text):
    assert parse_analysis(text) == Analysis("went up", "Push up first.")


def test_braces_inside_strings_do_not_break_parsing():
    text = '{"episode_summary": "saw {x}", "episode_skill": "Avoid the } trap, then go left."}'
    assert parse_analysis(text).skill == "Avoid the } trap, then go left."


def test_list_valued_skill_is_joined_and_whitespace_normalised():
    text = '{"episode_summary": "s", "episode_skill": ["Do A.", "  Then\\n B. "]}'
    assert parse_analysis(text).skill == "Do A.; Then B."


@pytest.mark.parametrize("text", [
    None, "", "no json here", '{"episode_summary": "s", "episode_skill": ""}', '{"episode_summary": "s"}',
    '{"episode_summary": "s", "episode_skill": "cut off', "[1, 2, 3]", '{"episode_skill": null}',
])
def test_failed_or_empty_analyses_give_none(text):
    assert parse_analysis(text) is None


@pytest.mark.parametrize("skill", ["Do X, then Y", "do x, then y.", "<one short instruction>"])
def test_a_skill_that_only_repeats_the_prompt_placeholder_is_a_failed_analysis(skill):
    assert parse_analysis(json.dumps({"episode_summary": "s", "episode_skill": skill})) is None
    # a real skill later in the same answer is still found
    text = json.dumps({"episode_skill": skill}) + ' then {"episode_skill": "Do push right, then up"}'
    assert parse_analysis(text) == Analysis("", "Do push right, then up")


def test_later_candidate_is_used_when_the_first_object_has_no_skill():
    text = 'schema: {"episode_summary": "<...>"} answer: {"episode_summary": "a", "episode_skill": "b"}'
    assert parse_analysis(text) == Analysis("a", "b")


def test_canonical_json_round_trips():
    analysis = Analysis("sum \"q\"", "skill, with commas")
    assert parse_analysis(analysis.to_json()) == analysis


def test_prompt_has_instruction_schema_outcome_and_every_step_in_order():
    text = build_analyzer_content("push the box", False, STEPS)
    parts = ["return only a JSON object", "workflow", "avoidance rules", SCHEMA, "Task: push the box",
             "episode_success: failure", "Step 1", "Observation: room A", "Response: <think>go</think><action>up</action>",
             "Action valid: true", "Step 2", "Observation: room B", "Response: I will dance", "Action valid: false"]
    positions = [text.index(p) for p in parts]
    assert positions == sorted(positions)
    assert "episode_success: success" in build_analyzer_content("t", True, STEPS)
    assert "Your task is to: " not in text  # the skill inserter must never mistake it for an acting prompt


def test_long_episodes_lose_their_oldest_steps_first():
    steps = [EpisodeStep(f"obs{i} " + "x " * 50, f"resp{i}", True) for i in range(10)]

    def count(text):
        return len(text.split())

    full = build_analyzer_content("t", True, steps)
    fitted = fit_analyzer_content("t", True, steps, count, max_tokens=count(full) // 2)
    assert count(fitted) <= count(full) // 2
    assert "obs9" in fitted and "obs0" not in fitted and "Step 10" in fitted
    assert "(Steps 1-" in fitted
    assert fit_analyzer_content("t", True, steps, count, max_tokens=None) == full
    tiny = fit_analyzer_content("t", True, steps, count, max_tokens=1)
    assert "obs9" in tiny and "obs8" not in tiny  # the last step always stays


def test_skill_library_retrieves_by_task_and_first_observation(tmp_path):
    library = SkillLibrary([
        SkillEntry("go left twice", "push the box", "# # #\n# P X _ #", won=True, source="a"),
        SkillEntry("never push into corners", "push the box", "# # #\n# P X _ #", won=False, source="b"),
        SkillEntry("climb the tree", "find the apple", "a garden with a tree", won=True, source="c"),
    ])
    assert library.retrieve("find the apple", "a garden with a big tree")[0].source == "c"
    assert library.retrieve("push the box", "# # #\n# P X _ #", won=False)[0].source == "b"
    assert library.retrieve("push the box", "# # #\n# P X _ #", won=True)[0].source == "a"
    path = tmp_path / "lib.jsonl"
    path.write_text('{"task_text": "t", "episode_skill": "s1", "won": true}\n{"ok": false, "episode_skill": null}\n'
                    'torn line\n{"task_text": "u", "skill": "s2"}\n')
    loaded = SkillLibrary.load(path)
    assert [e.skill for e in loaded.entries] == ["s1", "s2"]
    with pytest.raises(FileNotFoundError):
        SkillLibrary.load(tmp_path / "missing.jsonl")


SKILL = "Push the box left first."


@pytest.mark.parametrize("text", [
    '{"outcome": "failure", "summary": "The agent pushed the box into a corner.", "skill": "Push the box left first."',
    '{"episode_skill": "Push the box left first.", "episode_summary": "The agent pushed the box into a cor',
    '{"episode_skill": "Push the box left first.", "episode_summary": "The agent pushed the box.", ',
    '```json\n{"episode_skill": "Push the box left first.", "episode_summary": "It\'s a {corner} ca',
    '<think>short</think>{"episode_skill": "Push the box left first.", "notes": ["a", "b"], "episode_summary": "x',
])
def test_an_answer_cut_off_after_a_complete_skill_keeps_the_skill(text):
    analysis = parse_analysis(text)
    assert analysis is not None and analysis.skill == SKILL


@pytest.mark.parametrize("text", [
    '{"episode_summary": "The agent pushed the box into a corner.", "episode_skill": "Push the box le',
    '{"episode_summary": "The agent pushed the box into a corner.", "episode_skill": ',
    '{"episode_summary": "The agent pushed the box into a corner.", "episode_skill": "Push \\"the',
    '{"episode_summary": "The agent pushed the box into a cor',
])
def test_an_answer_cut_off_inside_the_skill_is_a_failed_analysis(text):
    assert parse_analysis(text) is None


def test_a_real_48_token_cut_of_the_embedded_models_answer():
    """Cut with the embedded model's tokenizer at a 48-token analysis budget (`algo.analysis_max_new_tokens`
    of the CPU smoke recipes): a skill written first survives the cut, a skill written after a long summary
    is cut mid-string and rejected."""
    from transformers import AutoTokenizer

    from seedbench.models.embedded import converted_dir

    tokenizer = AutoTokenizer.from_pretrained(converted_dir()[0])
    summary = ("The agent walked down twice, then right, and stepped into the hole on the third row, which ended "
               "the episode before it reached the goal.")
    skill = "Check the tile below before moving down; go right first when a hole is below."

    def cut(answer: dict) -> str:
        ids = tokenizer(json.dumps(answer), add_special_tokens=False)["input_ids"]
        assert len(ids) > 48
        return tokenizer.decode(ids[:48])

    skill_first = cut({"episode_skill": skill, "episode_summary": summary})
    assert not skill_first.rstrip().endswith("}")
    assert parse_analysis(skill_first) == Analysis(summary="", skill=skill)
    assert parse_analysis(cut({"episode_summary": summary, "episode_skill": skill})) is None
