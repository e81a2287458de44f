"""Shared projection helpers: pull the `<action>…</action>` payload out of model text.

Mirrors verl-agent's projection: the *last* complete action tag wins (models sometimes restate the
format in their thinking), surrounding whitespace and case are normalised, and anything that does not
parse is reported as invalid rather than raising.
"""

from __future__ import annotations

import re

_ACTION_RE = re.compile(r"<action>(.*?)</action>", re.DOTALL | re.IGNORECASE)


def extract_tag(text: str, tag: str = "action") -> str | None:
    """Return the stripped content of the last ``<tag>…</tag>`` in `text`, or None when absent."""
    pattern = _ACTION_RE if tag == "action" else re.compile(rf"<{tag}>(.*?)</{tag}>", re.DOTALL | re.IGNORECASE)
    matches = pattern.findall(text or "")
    if not matches:
        return None
    return " ".join(matches[-1].split())


def parse_choice(text: str, choices: list[str] | tuple[str, ...]) -> tuple[str, bool]:
    """Parse an action that must be one of `choices` (case-insensitive). Invalid → ``("", False)``."""
    payload = extract_tag(text)
    if payload is None:
        return "", False
    lowered = payload.lower()
    for choice in choices:
        if lowered == choice.lower():
            return choice, True
    return payload, False
