"""A tiny document model shared by the Markdown and HTML renderers, so both say the same thing.

A `Document` is a title plus `Section`s of blocks: `Text` paragraphs (inline ``code`` allowed),
`Bullets`, `Table` (cells already formatted as strings), `Figure` (PNG bytes) and `Quote` (verbatim
text such as a skill). `to_markdown` writes figures as files next to the Markdown; `seedbench.report
.html.to_html` embeds them.
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
                lines.extend(["> " + line if line else ">" for line in block.text.splitlines()] + [""])

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
