"""Search-QA scoring against hand-written cases: Search-R1's normalisation, exact match, extractor and
action grammar, each quirk under the reference option (default) and ours (docs/search.md)."""

from __future__ import annotations

import pytest

from seedbench.envs.search.answers import (cut_response, exact_match, extract_solution, normalize_answer,
                                           parse_turn)
from seedbench.envs.search.env import INSTRUCTION

# (text, reference normalisation, unicode normalisation) -- written by hand from qa_em.py's four steps.
NORMALISATION = [
    ("Paris", "paris", "paris"),
    ("  The   Eiffel Tower ", "eiffel tower", "eiffel tower"),
    ("A Tale of Two Cities", "tale of two cities", "tale of two cities"),
    ("an apple", "apple", "apple"),
    ("Theatre", "theatre", "theatre"),  # 'the' only as a whole word
    ("U.S.A.", "usa", "usa"),
    ("rock-n-roll", "rocknroll", "rocknroll"),  # punctuation is deleted, not replaced by a space
    ("O'Brien", "obrien", "obrien"),
    ("1,075,000", "1075000", "1075000"),
    ("“Paris”", "“paris”", "paris"),  # curly quotes are not ASCII punctuation: the reference keeps them
    ("1990–1995", "1990–1995", "19901995"),  # en dash
    ("¿Qué?", "¿qué", "qué"),
    ("Zürich", "zürich", "zürich"),  # letters with accents are never touched
    ("the the", "", ""),
    ("$100", "100", "100"),  # '$' is in string.punctuation
    ("a.b", "ab", "ab"),
]


@pytest.mark.parametrize("text,reference,unicode", NORMALISATION)
def test_normalisation_reference_and_unicode(text, reference, unicode):
    assert normalize_answer(text) == reference
    assert normalize_answer(text, "unicode") == unicode


# (prediction, golden answers, EM reference, EM unicode)
EXACT_MATCH = [
    ("paris", ["Paris"], True, True),
    ("The Paris", ["Paris"], True, True),
    ("Paris, France", ["Paris"], False, False),  # exact, not substring
    ("“Paris”", ["Paris"], False, True),
    ("New York", ["NYC", "New York City", "new york"], True, True),
    ("1932", ["1932"], True, True),
    ("1932.", ["1932"], True, True),
    ("", ["Paris"], False, False),
    ("", [""], True, True),
    (None, ["Paris"], False, False),
    ("Bramecourt", "Bramecourt", True, True),  # a bare string is one gold answer
]


@pytest.mark.parametrize("prediction,golden,reference,unicode", EXACT_MATCH)
def test_exact_match(prediction, golden, reference, unicode):
    assert exact_match(prediction, golden) is reference
    assert exact_match(prediction, golden, "unicode") is unicode


EXTRACTION = [
    ("<answer>Paris</answer>", None),  # one match: Search-R1 returns None
    ("<answer>x</answer> ... <answer> Paris </answer>", "Paris"),  # two: the last, stripped
    ("<answer>a</answer><answer>b</answer><answer>c</answer>", "c"),
    ("<answer>a\nb</answer><answer>multi\nline</answer>", "multi\nline"),  # DOTALL
    ("<Answer>a</Answer><Answer>b</Answer>", None),  # case-sensitive
    ("<answer>a</answer><answer>b", None),  # an unclosed tag is no match
    ("", None),
]


@pytest.mark.parametrize("text,expected", EXTRACTION)
def test_extract_solution_needs_two_matches(text, expected):
    assert extract_solution(text) == expected


def test_the_prompt_alone_is_extracted_as_beijing():
    """The quirk the issue names: the prompt holds two complete answer tags, so with no answer of the
    model's the extractor returns the example's "Beijing"; one model answer makes it the last match."""
    assert INSTRUCTION.count("<answer>") == 2
    assert extract_solution(INSTRUCTION + " Question: q?\n<think>no idea</think>") == "Beijing"
    assert extract_solution(INSTRUCTION + " Question: q?\n<answer> Paris </answer>") == "Paris"


# (response, reference parse, "none" parse)
TURNS = [
    ("<think>x</think><search>Alden Voss</search>", ("search", "Alden Voss"), ("search", "Alden Voss")),
    ("<think>x</think><answer> 1932 </answer>", ("answer", "1932"), ("answer", "1932")),
    # cut at the first </search>: a hallucinated answer after it is dropped; "none" takes the last tag
    ("<search>q</search><information>fake</information><answer>x</answer>", ("search", "q"), ("answer", "x")),
    # no </search>: cut at the first </answer>, the first answer counts
    ("<answer>a</answer> or <answer>b</answer>", ("answer", "a"), ("answer", "b")),
    # an answer before a search: the cut keeps both and the first tag (the answer) wins
    ("<answer>a</answer> <search>q</search>", ("answer", "a"), ("search", "q")),
    ("<search>one</search><search>two</search>", ("search", "one"), ("search", "two")),
    ("<think>just thinking</think>", None, None),
    ("<search>unclosed", None, None),
    ("<SEARCH>q</SEARCH>", None, None),
    ("<search>\n  multi\n line </search>", ("search", "multi\n line"), ("search", "multi\n line")),
]


@pytest.mark.parametrize("text,reference,none", TURNS)
def test_parse_turn_reference_cut_and_no_cut(text, reference, none):
    assert parse_turn(text) == reference
    assert parse_turn(text, "none") == none


def test_cut_response():
    assert cut_response("a<search>q</search>tail</search>") == "a<search>q</search>"
    assert cut_response("a<answer>x</answer>b<answer>y</answer>") == "a<answer>x</answer>"
    assert cut_response("<answer>x</answer><search>q</search>z") == "<answer>x</answer><search>q</search>"
    assert cut_response("no tags") == "no tags"
    assert cut_response("<search>q</search>tail", "none") == "<search>q</search>tail"
