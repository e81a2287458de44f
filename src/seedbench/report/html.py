"""Self-contained HTML for a `Document`: inline CSS, figures embedded as base64 PNG, no scripts and
no external requests, so a report can be mailed or archived as one file."""

from __future__ import annotations

import base64
import html
import re

from seedbench.report.document import Bullets, Document, Figure, Quote, Section, Table, Text

CSS = """
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1200px; padding: 0 1rem; color: #1a1a1a; line-height: 1.45; background: #fff; }
h1 { border-bottom: 3px solid #1f77b4; padding-bottom: .3rem; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; font-size: .9rem; }
th, td { border: 1px solid #ccc; padding: .25rem .55rem; }
th { background: #eef3f8; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr:nth-child(even) td { background: #fafafa; }
caption { caption-side: top; text-align: left; font-style: italic; padding-bottom: .3rem; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-style: italic; font-size: .9rem; }
blockquote { border-left: 4px solid #9ecae1; margin: .4rem 0 .8rem; padding: .3rem .8rem; background: #f5f9fc;
             white-space: pre-wrap; }
code { background: #f2f2f2; padding: 0 .25rem; border-radius: 3px; }
nav ul { columns: 2; }
.warn { color: #a33; }
"""

_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s\"]+)\)")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")


_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])|&(?:amp|lt|gt|quot|#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6});")
"""A backslash-escaped ASCII punctuation mark or a character reference: what `md_escape` writes."""
_HELD = re.compile("\x00([0-9]+)\x00")


def _inline(text: str) -> str:
    # Escaped characters are held out of the Markdown patterns below and come back as plain text.
    held: list[str] = []

    def hold(match: re.Match) -> str:
        held.append(match.group(1) if match.group(1) is not None else html.unescape(match.group(0)))
        return f"\x00{len(held) - 1}\x00"

    escaped = html.escape(_ESCAPE.sub(hold, text.replace("\x00", "")), quote=True)
    escaped = _LINK.sub(lambda m: f'<a href="{m.group(2)}">{m.group(1)}</a>', escaped)
    escaped = _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escaped)
    escaped = _BOLD.sub(lambda m: f"<strong>{m.group(1)}</strong>", escaped)
    escaped = _ITALIC.sub(lambda m: f"<em>{m.group(1)}</em>", escaped)
    return _HELD.sub(lambda m: html.escape(held[int(m.group(1))], quote=True), escaped)


_TAG = re.compile(r"<[^>]*>")


def _plain(text: str) -> str:
    """Inline Markdown as attribute text (an image's alt): what `_inline` shows, without its tags, so the
    escapes `md_escape` wrote come out as the characters they stand for."""
    return _TAG.sub("", _inline(text))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def _table(table: Table) -> str:
    numeric = table.numeric or [False] * len(table.header)
    out = ["<table>"]
    if table.caption:
        out.append(f"<caption>{_inline(table.caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{_inline(h)}</th>" for h in table.header) + "</tr></thead><tbody>")
    for row in table.rows:
        cells = "".join(f'<td class="num">{_inline(c)}</td>' if n else f"<td>{_inline(c)}</td>"
                        for c, n in zip(row, numeric))
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def to_html(doc: Document) -> str:
    body: list[str] = [f"<h1>{_inline(doc.title)}</h1>"]
    used: set[str] = set()

    def anchor(title: str) -> str:
        base = slug = _slug(title)
        k = 2
        while slug in used:
            slug, k = f"{base}-{k}", k + 1
        used.add(slug)
        return slug

    top = {id(s): anchor(s.title) for s in doc.sections}
    toc = [f'<li><a href="#{top[id(s)]}">{_inline(s.title)}</a></li>' for s in doc.sections]
    if toc:
        body.append("<nav><ul>" + "".join(toc) + "</ul></nav>")

    def walk(blocks, level):
        for block in blocks:
            if isinstance(block, Section):
                tag = f"h{min(level, 6)}"
                slug = top.get(id(block)) or anchor(block.title)
                body.append(f'<{tag} id="{slug}">{_inline(block.title)}</{tag}>')
                walk(block.blocks, level + 1)
            elif isinstance(block, Text):
                body.append(f"<p>{_inline(block.text)}</p>")
            elif isinstance(block, Bullets):
                body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
            elif isinstance(block, Table):
                body.append(_table(block))
            elif isinstance(block, Figure):
                data = base64.b64encode(block.png).decode("ascii")
                alt = _plain(block.caption) if block.caption else html.escape(block.name)
                caption = f"<figcaption>{_inline(block.caption)}</figcaption>" if block.caption else ""
                body.append(f'<figure><img alt="{alt}" src="data:image/png;base64,{data}">{caption}</figure>')
            elif isinstance(block, Quote):
                label = f"<p><strong>{_inline(block.label)}</strong></p>" if block.label else ""
                body.append(f"{label}<blockquote>{html.escape(block.text, quote=False)}</blockquote>")

    walk(doc.sections, 2)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(doc.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
