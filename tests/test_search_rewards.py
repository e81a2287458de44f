"""Search-R1's reward options (``reward=em|subem|em_format``), its invalid-action hint and its "?" rule.

Hand-computed values, Search-R1's format-run scores (structure 0.2, final 0.1; retrieval 0.1 where set):
a well-formed trajectory with the right answer 1.0; well-formed, wrong answer, a passage holding the gold
answer 0.2 + 0.1 = 0.3; malformed with the right answer 1 − 0.2 = 0.8; malformed and wrong 0.1; no answer
and malformed 0.
"""

from __future__ import annotations

import json

import pytest

from seedbench.envs.search.rewards import retrieval_correct, search_reward, substring_match, valid_sequence

MARKER = "<|im_start|>assistant\n"  # what Search-R1's is_valid_sequence looks for in the decoded sequence
GOOD = ("<think>find the capital</think><search>capital of France</search>\n\n<information>Doc 1(Title: \"France\") "
        "Paris is the capital of France.</information>\n\n<think>found it</think><answer>{}</answer>")


def test_a_sequence_without_the_assistant_marker_is_invalid_as_in_search_r1():
    text = "<think>x</think><answer>Paris</answer>"
    assert valid_sequence(text) == (False, "missing assistant marker")
    assert valid_sequence("<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n" + text) == (True, "valid")
    assert valid_sequence(text, missing_marker="ignored") == (True, "valid")
    with pytest.raises(ValueError, match="missing_marker: unknown 'x'; choose one of invalid, ignored"):
        valid_sequence(text, missing_marker="x")


def test_valid_sequence_follows_search_r1s_grammar():
    assert valid_sequence(MARKER + GOOD.format("Paris")) == (True, "valid")
    assert valid_sequence(MARKER + "<think>x</think><answer>Paris</answer>")[0]
    assert not valid_sequence(MARKER + "<answer>Paris</answer>")[0]  # no reasoning first
    assert not valid_sequence(MARKER + "I think <think>x</think><answer>Paris</answer>")[0]  # text outside the tags
    assert not valid_sequence(MARKER + "<think>x</think><search>q</search>")[0]  # ends before an answer
    assert not valid_sequence(MARKER + "<think>x<think></think><answer>a</answer>")[0]  # unbalanced
    hint = "\nMy previous action is invalid. Let me try again.\n"
    assert not valid_sequence(MARKER + "<think>x</think>" + hint + "<think>y</think><answer>a</answer>")[0]


def test_retrieval_and_substring_checks():
    assert retrieval_correct(GOOD.format("London"), ["paris"]) and not retrieval_correct(GOOD.format("x"), ["Lyon"])
    assert substring_match("Paris, France", ["paris"]) and not substring_match("Pari", ["Paris"])
    assert substring_match("the Paris", "paris") and not substring_match(None, ["paris"])


@pytest.mark.parametrize("answer,trajectory,expected", [
    ("Paris", GOOD.format("Paris"), 1.0),
    ("London", GOOD.format("London"), 0.3),
    ("Paris", "I say <answer>Paris</answer>", 0.8),
    ("London", "I say <answer>London</answer>", 0.1),
    (None, "no tags at all", 0.0),
])
def test_em_format_by_hand(answer, trajectory, expected):
    value, _ = search_reward("em_format", answer, ["Paris"], MARKER + trajectory, retrieval_score=0.1)
    assert value == pytest.approx(expected)


def test_em_and_subem_with_score_and_format_score():
    assert search_reward("em", "Paris, France", ["Paris"], score=2.0, format_score=0.5) == (0.5, False)
    assert search_reward("subem", "Paris, France", ["Paris"], score=2.0, format_score=0.5) == (2.0, True)
    assert search_reward("em", None, ["Paris"], format_score=0.5) == (0.0, False)
    assert search_reward("em", "the paris", ["Paris"]) == (1.0, True)
    with pytest.raises(ValueError, match="em, subem, em_format"):
        search_reward("f1", "Paris", ["Paris"])


# -- through the env ------------------------------------------------------------------------------------

bm25s = pytest.importorskip("bm25s", reason="Search-QA needs the [search] extra: pip install 'seedbench[search]'")

from seedbench.envs.search.env import INVALID_HINT, SearchQAEnv  # noqa: E402


def test_the_invalid_action_hint_is_search_r1s_wording():
    assert INVALID_HINT == ("My previous action is invalid. If I want to search, I should put the query between "
                            "<search> and </search>. If I want to give the final answer, I should put the answer "
                            "between <answer> and </answer>. Let me try again.")
    env = SearchQAEnv(kb_size="small")
    env.reset(seed=0, options={"split": "test"})
    assert env.step("no tags")[0] == INVALID_HINT


def test_questions_end_with_a_question_mark_as_search_r1_processes_them(tmp_path):
    rows = [{"id": "1", "question": " who wrote hamlet ", "golden_answers": ["Shakespeare"]},
            {"id": "2", "question": "Is A older?", "golden_answers": ["yes"]}]
    (tmp_path / "nq_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "wiki.jsonl").write_text(json.dumps({"id": "0", "contents": '"Hamlet"\nHamlet is by Shakespeare.'}) + "\n")
    files = {"dataset": "files", "test_file": str(tmp_path / "nq_test.jsonl"), "corpus_file": str(tmp_path / "wiki.jsonl")}
    env = SearchQAEnv(**files)
    assert env.reset(seed=0, options={"split": "test"})[0] == "Question: who wrote hamlet?"
    assert env.reset(seed=1, options={"split": "test"})[1]["task"] == "Is A older?"
    plain = SearchQAEnv(**files, question_mark=False)
    assert plain.reset(seed=0, options={"split": "test"})[0] == "Question: who wrote hamlet"
    assert plain.provenance()["manifest_checksum"] != env.provenance()["manifest_checksum"]


def test_reward_options_reach_the_env():
    """One search that retrieves the gold passage, then a wrong answer: em 0, em_format 0.2 + 0.1."""
    for reward, expected in (("em", 0.0), ("em_format", 0.3)):
        env = SearchQAEnv(kb_size="small", reward=reward, retrieval_score=0.1)
        q = env.data.questions["test"][0]
        env.reset(seed=0, options={"split": "test"})
        env.step(f"<think>look</think><search>{q['gold_titles'][0]}</search>")
        _, value, terminated, _, info = env.step("<think>sure</think><answer>nobody at all</answer>")
        assert terminated and value == pytest.approx(expected) and not info["won"]
    env = SearchQAEnv(kb_size="small", reward="subem")
    q = env.data.questions["test"][0]
    env.reset(seed=0, options={"split": "test"})
    _, value, _, _, info = env.step(f"<answer>surely {q['golden_answers'][0]}</answer>")
    assert value == 1.0 and info["won"]
    with pytest.raises(ValueError, match="reward: unknown"):
        SearchQAEnv(kb_size="small", reward="f1")
