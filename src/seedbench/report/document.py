"""A tiny document model shared by the Markdown and HTML renderers, so both say the same thing.

A `Document` is a title plus `Section`s of blocks: `Text` paragraphs (inline ``code`` allowed),
`Bullets`, `Table` (cells already formatted as strings), `Figure` (PNG bytes) and `Quote` (verbatim
text such as a skill). `to_markdown` writes figures as files next to the Markdown; `seedbench.report
.html.to_html` embeds them.

Block text is inline Markdown written by seedbench. A string that comes from a run or a submission (an
agent or method name, a note, a metric name) is someone else's text: it enters a block only through
`md_escape` (plain text) or `md_code` (a name shown as code), so ``<script>``, a ``|`` or a newline in it
can never become HTML, a table column or a new block in report.md or the leaderboard README. Quote text
(a skill) is verbatim: the renderers escape it themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Union


@dataclass
class Text:
    text: str


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    numeric: list[bool] | None = None  # right-align these columns


@dataclass
class Figure:
    name: str  # file stem, unique in the document
    png: bytes
    caption: str = ""


@dataclass
class Quote:
    text: str
    label: str = ""


Block = Union[Text, Bullets, Table, Figure, Quote, "Section"]


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)

    def add(self, *blocks: Block) -> "Section":
        self.blocks.extend(blocks)
        return self


@dataclass
class Document:
    title: str
    sections: list[Section] = field(default_factory=list)

    def figures(self) -> list[Figure]:
        out: list[Figure] = []

        def walk(blocks):
            for b in blocks:
                if isinstance(b, Figure):
                    out.append(b)
                elif isinstance(b, Section):
                    walk(b.blocks)

        walk(self.sections)
        return out


_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;"}
_MD_BACKSLASHED = set("\\`*_[]~#")


def _is_control(ch: str) -> bool:
    return ord(ch) < 32 or 127 <= ord(ch) < 160 or ch in "\u2028\u2029"


def md_escape(text: object) -> str:
    """`text` as literal inline Markdown: ``&``, ``<``, ``>`` and ``|`` as entities (no raw HTML, no table
    cell split), Markdown punctuation (``\\ ` * _ [ ] ~ #``) backslash-escaped, and newlines and other
    control characters as spaces (no new block). `seedbench.report.html` reads both escapes back."""
    text = str(text)
    out = []
    for i, ch in enumerate(text):
        if ch in _MD_ENTITIES:
            out.append(_MD_ENTITIES[ch])
        elif ch == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
            out.append(ch)  # inside a word (valid_seen) an underscore can neither open nor close emphasis
        elif ch in _MD_BACKSLASHED:
            out.append("\\" + ch)
        else:
            out.append(" " if _is_control(ch) else ch)
    return "".join(out)


def md_markup(text: object) -> str:
    """Markdown a maintainer wrote in a data file (a board's notes): its emphasis, code and links are kept,
    but raw HTML (``&``, ``<``, ``>`` become entities) and line breaks that would start a new block are not."""
    return "".join(_MD_ENTITIES.get(ch, " " if _is_control(ch) else ch) for ch in str(text))


def md_code(text: object) -> str:
    """`text` as an inline code span (HTML inside one is shown, never run), or as `md_escape` text when it
    holds a backtick or a control character, which would end the span or the line, or a ``&`` or ``\\``,
    which the HTML renderer would read as an escape."""
    text = str(text)
    if text.strip() and not any(ch in "`&\\" or _is_control(ch) for ch in text):
        return f"`{text}`"
    return md_escape(text)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> list[str]:
    numeric = table.numeric or [False] * len(table.header)
    lines = ["| " + " | ".join(_md_cell(h) for h in table.header) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    return lines


def to_markdown(doc: Document, figure_dir: str = "plots") -> str:
    """Markdown text; figures are referenced as ``<figure_dir>/<name>.png`` (write them with
    `write_figures`)."""
    lines = [f"# {doc.title}", ""]

    def walk(blocks, level):
        for block in blocks:
            if isinstance(block, Section):
                lines.extend([f"{'#' * level} {block.title}", ""])
                walk(block.blocks, level + 1)
            elif isinstance(block, Text):
                lines.extend([block.text, ""])
            elif isinstance(block, Bullets):
                lines.extend([f"- {item}" for item in block.items] + [""])
            elif isinstance(block, Table):
                if block.caption:
                    lines.extend([f"*{block.caption}*", ""])
                lines.extend(markdown_table(block) + [""])
            elif isinstance(block, Figure):
                lines.extend([f"![{block.caption or block.name}]({figure_dir}/{block.name}.png)", ""])
                if block.caption:
                    lines.extend([f"*{block.caption}*", ""])
            elif isinstance(block, Quote):
                if block.label:
                    lines.append(f"**{block.label}**")
                    lines.append("")
                lines.extend(["> " + md_escape(line) if line else ">" for line in block.text.splitlines()] + [""])

    walk(doc.sections, 2)
    return "\n".join(lines).rstrip() + "\n"


def write_figures(doc: Document, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for fig in doc.figures():
        path = directory / f"{fig.name}.png"
        path.write_bytes(fig.png)
        paths.append(path)
    return paths
