"""Shared projection helpers: pull the `<action>…</action>` payload out of model text.

Mirrors verl-agent's projection: the *last* complete action tag wins (models sometimes restate the
format in their thinking), surrounding whitespace and case are normalised, and anything that does not
parse is reported as invalid rather than raising.
"""

from __future__ import annotations



def extract_tag(text: str, tag: str = "action") -> str | None:
    """Return the stripped content of the last ``<tag>…</tag>`` in `text`, or None when absent.

    Linear time: find the last closing tag, then the last opening tag before it (a regex over a long
    runaway output full of unclosed tags is quadratic)."""
    lowered = (text or "").lower()
    close = lowered.rfind(f"</{tag}>")
    if close < 0:
        return None
    open_tag = f"<{tag}>"
    start = lowered.rfind(open_tag, 0, close)
    if start < 0:
        return None
    return " ".join(text[start + len(open_tag) : close].split())


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
