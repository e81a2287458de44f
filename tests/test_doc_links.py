"""Every relative link in README.md and docs/**/*.md points at a file that exists, and every `#anchor` into a
Markdown file names one of its headings (GitHub's slugs), so moving a section or a file cannot leave a
reader at a dead link."""

import functools
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")


def doc_files():
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def prose_lines(text, strip_code=True):
    """The lines outside fenced code blocks; inline code removed unless asked (a link inside code is an example)."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield INLINE_CODE.sub("", line) if strip_code else line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(path):
    seen, out = {}, set()
    for line in prose_lines(path.read_text(encoding="utf-8"), strip_code=False):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = slug(match.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(path, root=REPO):
    broken = []
    for line in prose_lines(path.read_text(encoding="utf-8")):
        for match in LINK.finditer(line):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                broken.append(f"{path.relative_to(root)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor.lower() not in anchors(dest):
                broken.append(f"{path.relative_to(root)}: {target} (no heading #{anchor})")
    return broken


def test_slug_matches_github():
    assert slug("Update: repeating no work") == "update-repeating-no-work"
    assert slug("bf16 on CPU (`benchmarks/bf16_speed.py`)") == "bf16-on-cpu-benchmarksbf16_speedpy"
    assert slug("9. Where seedbench differs from the reference code") == "9-where-seedbench-differs-from-the-reference-code"


def test_a_dead_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# Top\n\n[ok](#top) [gone](b.md) [no](#nowhere)\n```\n[code](c.md)\n```\n")
    assert broken_links(tmp_path / "a.md", root=tmp_path) == ["a.md: b.md (no such file)", "a.md: #nowhere (no heading #nowhere)"]


@pytest.mark.parametrize("path", doc_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(path):
    assert broken_links(path) == []
