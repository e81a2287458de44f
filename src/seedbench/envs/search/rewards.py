"""Search-R1's reward functions, as named options of the Search-QA env (``reward=...``; docs/search.md).

* ``em`` (default; ``qa_em.compute_score_em``): ``score`` for an exact match of the extracted answer,
  ``format_score`` for an extracted answer that does not match, 0 without an answer.
* ``subem`` (``qa_em.compute_score_subem``): the same, but a match is a normalised gold answer occurring
  *inside* the normalised prediction ("paris france" matches "Paris").
* ``em_format`` (``qa_em_format.compute_score_em``, Search-R1's format-reward runs): the exact match plus
  partial credit for a well-formed trajectory (`valid_sequence`) and for retrieving a passage that holds a
  gold answer (`retrieval_correct`):

  ============================  ==========================  ===========================================
  answer                        format valid                format invalid
  ============================  ==========================  ===========================================
  exact match                   ``score``                   ``score − structure_format_score``
  wrong, or none extracted      ``structure_format_score``  ``final_format_score`` (wrong) / 0 (none)
                                (+ ``retrieval_score`` when
                                a passage held the answer)
  ============================  ==========================  ===========================================

The reference checks the format of everything after the chat template's ``<|im_start|>assistant`` marker,
so with a template without that marker every trajectory is "invalid": ``missing_marker="invalid"``.
``"ignored"`` checks the whole text when the marker is missing.
"""

from __future__ import annotations

import re

from seedbench.envs.search.answers import exact_match, normalize_answer

REWARDS = ("em", "subem", "em_format")
MISSING_MARKER_RULES = ("invalid", "ignored")
_ASSISTANT_MARKER = re.compile(r"<\|im_start\|>assistant\s*")

_TAG = re.compile(r"(</?(?:think|search|information|answer)>)")
_INFORMATION = re.compile(r"<information>(.*?)</information>", re.DOTALL)
# (state, tag) -> next state of a well-formed trajectory: think, then search → information → think … or answer
_TRANSITIONS = {
    ("start", "<think>"): "in_think", ("information", "<think>"): "in_think",
    ("in_think", "</think>"): "after_think",
    ("after_think", "<search>"): "in_search", ("in_search", "</search>"): "after_search",
    ("after_search", "<information>"): "in_information", ("in_information", "</information>"): "information",
    ("after_think", "<answer>"): "in_answer", ("in_answer", "</answer>"): "end",
}
_INSIDE = {"in_think", "in_search", "in_information", "in_answer"}


def substring_match(prediction: str | None, golden: str | list[str], normalization: str = "reference") -> bool:
    """True when a normalised gold answer is a substring of the normalised prediction (qa_em ``subem_check``)."""
    if prediction is None:
        return False
    golden = [golden] if isinstance(golden, str) else list(golden)
    predicted = normalize_answer(prediction, normalization)
    return any(normalize_answer(g, normalization) in predicted for g in golden)


def valid_sequence(text: str, missing_marker: str = "invalid") -> tuple[bool, str]:
    """Search-R1's ``is_valid_sequence`` on a decoded sequence: what follows its first
    ``<|im_start|>assistant`` marker must have every tag balanced, the tags in the order think → (search →
    information → think)* → answer, only whitespace between a closing tag and the next opening one, and end
    with ``</answer>``. A sequence without the marker is invalid (``missing_marker="invalid"``, the
    reference) or checked whole (``"ignored"``). Returns (valid, reason)."""
    marker = _ASSISTANT_MARKER.search(text)
    if marker is not None:
        text = text[marker.end():]
    elif missing_marker == "invalid":
        return False, "missing assistant marker"
    elif missing_marker != "ignored":
        raise ValueError(f"missing_marker: unknown {missing_marker!r}; choose one of {', '.join(MISSING_MARKER_RULES)}")
    for tag in ("think", "search", "information", "answer"):
        opened, closed = text.count(f"<{tag}>"), text.count(f"</{tag}>")
        if opened != closed:
            return False, f"{opened} <{tag}> vs {closed} </{tag}>"
    state = "start"
    for part in _TAG.split(text):
        if not part.strip():
            continue
        if _TAG.fullmatch(part):
            following = _TRANSITIONS.get((state, part))
            if following is None:
                return False, f"unexpected {part} in state {state}"
            state = following
        elif state not in _INSIDE:
            return False, f"text outside the tags in state {state}"
    return (True, "valid") if state == "end" else (False, f"ends in state {state}")


def retrieval_correct(text: str, golden: list[str], normalization: str = "reference") -> bool:
    """Search-R1's ``is_retrieval_correct``: some ``<information>`` block of `text` contains a normalised gold
    answer."""
    blocks = [normalize_answer(b.strip(), normalization) for b in _INFORMATION.findall(text)]
    return any(normalize_answer(g, normalization) in block for block in blocks for g in golden)


def search_reward(reward: str, answer: str | None, golden: list[str], trajectory: str = "", *,
                  normalization: str = "reference", score: float = 1.0, format_score: float = 0.0,
                  structure_format_score: float = 0.2, final_format_score: float = 0.1,
                  retrieval_score: float = 0.0, missing_marker: str = "invalid") -> tuple[float, bool]:
    """(reward, correct) of one episode. `answer`: the extracted answer (None: none); `trajectory`: the
    decoded sequence from the assistant marker on (``em_format`` only; `valid_sequence`). `correct` is the
    match the reward is built on (exact, or substring for ``subem``)."""
    if reward == "subem":
        correct = substring_match(answer, golden, normalization)
    else:
        correct = exact_match(answer, golden, normalization)
    if reward in ("em", "subem"):
        if answer is None:
            return 0.0, False
        return (score if correct else format_score), correct
    if reward != "em_format":
        raise ValueError(f"reward: unknown {reward!r}; choose one of {', '.join(REWARDS)}")
    valid, _ = valid_sequence(trajectory, missing_marker)
    partial = structure_format_score + (retrieval_score if retrieval_correct(trajectory, golden, normalization) else 0.0)
    if correct:
        return (score if valid else score - structure_format_score), True
    if valid:
        return partial, False
    return (final_format_score if answer is not None else 0.0), False
