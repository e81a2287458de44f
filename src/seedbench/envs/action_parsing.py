"""Projection helpers: from raw model text to the payload of an ``<action>…</action>`` tag.

Two named rules (an env picks one with its ``projection`` kwarg; docs/method.md §9):

* ``reference`` (default; verl-agent's ALFWorld and Sokoban projections, used by the SEED code): the text
  must contain a ``<think>…</think>`` block and an action tag and no CJK character; the *first* action
  tag counts.
* ``seedbench`` (the older rule here): no think block required, CJK allowed, the *last* complete action
  tag counts (models sometimes restate the format inside their reasoning).

Whitespace and case of the payload are normalised; text that does not parse is reported as invalid,
never raised.

`parse_choice` called without ``projection`` keeps the rule of seedbench 0.1 (``seedbench``: a bare
``<action>X</action>`` is accepted) and warns (`DeprecationWarning`), so a plugin written from the 0.1 docs
keeps scoring its answers; its default becomes ``reference`` in seedbench 0.3.0 (CHANGELOG.md).
"""

from __future__ import annotations

import re
import warnings
from typing import Literal

__all__ = ["CJK", "PROJECTIONS", "Projection", "check_projection", "extract_tag", "parse_choice", "project_action"]

Projection = Literal["reference", "seedbench"]
PROJECTIONS: tuple[str, ...] = ("reference", "seedbench")
CJK = re.compile("[\u4e00-\u9fff]")
"""CJK unified ideographs: the reference rejects any response containing one (Qwen models drift into
Chinese)."""


def check_projection(projection: str) -> str:
    if projection not in PROJECTIONS:
        raise ValueError(f"projection: unknown {projection!r}; choose one of {', '.join(PROJECTIONS)}")
    return projection


def project_action(text: str, projection: str = "reference") -> str | None:
    """The action payload of `text` under `projection`, or None when the text is not well formed."""
    text = text or ""
    if projection == "reference":
        if CJK.search(text) or extract_tag(text, "think", which="first") is None:
            return None
        return extract_tag(text, "action", which="first")
    return extract_tag(text, "action", which="last")


PARSE_CHOICE_DEFAULT_WARNING = r"parse_choice\(\) without projection="
"""The start of the warning of `parse_choice` without ``projection``: the CLI shows it (`seedbench.cli`),
since whoever runs a plugin env is rarely its author, and Python hides a DeprecationWarning by default."""


def extract_tag(text: str, tag: str = "action", which: Literal["first", "last"] = "last") -> str | None:
    """The whitespace-normalised content of the first or last complete ``<tag>…</tag>`` in `text`, or None.

    Linear time (a regex over a long runaway output full of unclosed tags is quadratic): ``last`` finds the
    last closing tag, then the last opening tag before it; ``first`` the first opening tag, then the first
    closing tag after it."""
    lowered = (text or "").lower()
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    if which == "first":
        start = lowered.find(open_tag)
        close = lowered.find(close_tag, start + len(open_tag)) if start >= 0 else -1
    else:
        close = lowered.rfind(close_tag)
        start = lowered.rfind(open_tag, 0, close) if close >= 0 else -1
    if start < 0 or close < 0:
        return None
    return " ".join(text[start + len(open_tag) : close].split())


def parse_choice(text: str, choices: list[str] | tuple[str, ...], projection: str | None = None) -> tuple[str, bool]:
    """Parse an action that must be one of `choices` (case-insensitive). Invalid → ``("", False)``.

    Without `projection` the 0.1 rule applies (``seedbench``) with a `DeprecationWarning` naming the
    argument: a plugin that never passed it keeps accepting ``<action>X</action>`` for one release."""
    if projection is None:
        warnings.warn("parse_choice() without projection= uses the 'seedbench' rule of seedbench 0.1 (a bare "
                      "<action>X</action> is accepted); its default becomes 'reference' (a <think>...</think> block "
                      "required) in seedbench 0.3.0: pass projection='seedbench' to keep "
                      "this rule or projection='reference' for the reference one (docs/adding_an_env.md)",
                      DeprecationWarning, stacklevel=2)
        projection = "seedbench"
    payload = project_action(text, projection)
    if payload is None:
        return "", False
    lowered = payload.lower()
    for choice in choices:
        if lowered == choice.lower():
            return choice, True
    return payload, False
