"""Answers: Search-R1's exact-match normalisation, the action grammar, and the answer extractor.

Each rule that changes numbers is a named option; ``"reference"`` is Search-R1's behaviour and the
default (docs/search.md, docs/method.md §9):

* normalisation (`normalize_answer`): ``reference`` lower-cases, deletes ASCII punctuation
  (``string.punctuation``) only, removes the articles a/an/the and collapses whitespace (qa_em.py); so a
  curly quote or an en dash survives and "“Paris”" does not match "Paris". ``unicode`` also deletes every
  Unicode punctuation character (categories P*).
* response cut (`cut_response`, `parse_turn`): ``reference`` cuts the response at the first
  ``</search>``, or, without one, at the first ``</answer>``, and the *first* ``<search>``/``<answer>`` tag
  of what is left is the action (generation.py); ``none`` keeps the whole response and the *last* tag wins.
* extraction (`extract_solution`): ``reference`` scores the whole trajectory text (prompt + every
  response + every information block) and needs at least two ``<answer>…</answer>`` matches, the last
  being the answer; the prompt itself holds two ("inside <answer> and </answer>", "<answer> Beijing
  </answer>"), so a model that never answers is scored on "Beijing". ``response`` scores only the payload
  of the episode's answer action (no answer → no reward).
"""

from __future__ import annotations

import re
import string
import unicodedata

NORMALIZATIONS = ("reference", "unicode")
RESPONSE_CUTS = ("reference", "none")
EXTRACTIONS = ("reference", "response")

_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_TURN = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)


def check_option(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}: unknown {value!r}; choose one of {', '.join(choices)}")
    return value


def normalize_answer(text: str, normalization: str = "reference") -> str:
    """Search-R1's ``normalize_answer`` (lower → punctuation → articles → whitespace), order kept."""
    text = text.lower()
    if normalization == "reference":
        text = "".join(ch for ch in text if ch not in _ASCII_PUNCTUATION)
    else:
        text = "".join(ch for ch in text if ch not in _ASCII_PUNCTUATION
                       and not unicodedata.category(ch).startswith("P"))
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str | None, golden: str | list[str], normalization: str = "reference") -> bool:
    """True when the normalised prediction equals any normalised gold answer (qa_em.py ``em_check``)."""
    if prediction is None:
        return False
    golden = [golden] if isinstance(golden, str) else list(golden)
    predicted = normalize_answer(prediction, normalization)
    return any(normalize_answer(g, normalization) == predicted for g in golden)


def extract_solution(text: str) -> str | None:
    """Search-R1's extractor: the last ``<answer>`` payload (stripped), but only when there are at least
    two matches in `text` (the trajectory text *with* its prompt); None otherwise."""
    matches = list(_ANSWER.finditer(text or ""))
    return matches[-1].group(1).strip() if len(matches) >= 2 else None


def cut_response(text: str, cut: str = "reference") -> str:
    """The part of a response the protocol keeps: up to the first ``</search>``, else up to the first
    ``</answer>``, else all of it (``reference``); ``none`` keeps everything."""
    text = text or ""
    if cut == "none":
        return text
    for closing in ("</search>", "</answer>"):
        position = text.find(closing)
        if position >= 0:
            return text[: position + len(closing)]
    return text


def parse_turn(text: str, cut: str = "reference") -> tuple[str, str] | None:
    """``(kind, content)`` with kind ``search`` or ``answer``, or None when the response holds neither tag.

    ``reference``: the first tag of the cut response; ``none``: the last tag of the whole response.
    Content is stripped; tags are case-sensitive, as in generation.py."""
    matches = list(_TURN.finditer(cut_response(text, cut)))
    if not matches:
        return None
    match = matches[0] if cut == "reference" else matches[-1]
    return match.group(1), match.group(2).strip()


def command_text(kind: str, content: str) -> str:
    """The canonical command for a parsed turn, e.g. ``<search>Alden Voss</search>``; commands are whole
    tags so an expert's plan is valid model output wherever it is wrapped."""
    return f"<{kind}>{content}</{kind}>"
