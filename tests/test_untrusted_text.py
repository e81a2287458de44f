"""Text from submissions and runs is data, never markup or control: leaderboard validation survives
hostile files (deep nesting, crashing fields, bad links, wrong paths), and report.md and the leaderboard
README show such strings literally (`md_escape`, `md_code`)."""

from __future__ import annotations

import json

import pytest

import seedbench.leaderboard as lb
from seedbench.leaderboard import submission as V
from seedbench.report.document import md_code, md_escape
from seedbench.report.html import _inline
from tests.test_leaderboard import BOARD, _edit_meta, _edit_summary, boards, problems, submission  # noqa: F401

HOSTILE = "<img src=x onerror=alert(1)>|cell\n# heading `x` *b* [l](javascript:alert(1)) & done"


# -- validation of hostile submissions ----------------------------------------------------------------------
def test_a_summary_nested_100k_deep_is_one_problem_and_the_others_are_still_checked(boards, capsys):
    depth = 100_000
    (submission(boards) / "summary.json").write_text('{"seeds": ' + "[" * depth + "]" * depth + "}")  # ~200 KB
    _edit_summary(submission(boards, "grpo"), lambda d: d.__setitem__("seeds", d["seeds"][:2]))
    assert lb.main(["validate", "--root", str(boards)]) == 1
    out = capsys.readouterr().out
    assert "Traceback" not in out and "RecursionError" not in out
    assert f"{BOARD}/2026-01-02_seed_tiny/summary.json: nested more than {V.MAX_DEPTH} levels deep" in out
    assert f"{BOARD}/2026-01-02_grpo_tiny/summary.json: seeds: missing seeds: 2 distinct seed(s)" in out
    assert out.rstrip().endswith("2 submission(s) checked, 2 problem(s)")


def test_a_summary_just_past_the_depth_limit_and_a_yaml_alias_bomb_are_refused(boards):
    _edit_summary(submission(boards), lambda d: d.__setitem__("notes", json.loads("[" * V.MAX_DEPTH + "]" * V.MAX_DEPTH)))
    bomb = "a: &a [" + ", ".join(["x"] * 10) + "]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n" for i in range(8))
    (submission(boards, "grpo") / "metadata.yaml").write_text(bomb)  # 10^9 values when walked
    found = problems(boards)
    assert any(p.startswith(f"{BOARD}/2026-01-02_seed_tiny/summary.json: nested more than {V.MAX_DEPTH} levels deep")
               for p in found), found
    assert any(p.startswith(f"{BOARD}/2026-01-02_grpo_tiny/metadata.yaml: holds more than 1,000,000 values")
               for p in found), found


def test_an_error_while_checking_one_submission_is_its_problem(boards, monkeypatch):
    _edit_meta(submission(boards), lambda d: d.update({1: "a number as a key", None: "null as a key"}))
    assert any("metadata.yaml: 1: unknown field" in p for p in problems(boards))  # sorting mixed keys used to crash
    real = V._check_identity

    def crash_on_seed(s, sub, *args):
        if sub.name.endswith("_seed_tiny"):
            raise KeyError("boom")
        return real(s, sub, *args)

    monkeypatch.setattr(V, "_check_identity", crash_on_seed)
    found = problems(boards)
    assert f"{BOARD}/2026-01-02_seed_tiny: could not be checked (KeyError: 'boom')" in found
    assert all("grpo" not in p for p in found)  # the other submission was checked, and is valid


@pytest.mark.parametrize("url", ["javascript:alert(1)", "https:evil.example/x", "https:///x", "https://",
                                 "ftp://example.org/x", "https://arxiv.org/abs/1 x", "https://x.org/\"><script>",
                                 "https://exa\u200bmple.org/", "https://x.org/\x00", "https://arxiv.org@evil.example/",
                                 "https://x.org:99999/", "data:text/html,<b>", "//x.org/a", 42])
def test_paper_links_must_parse_as_plain_web_urls(boards, url):
    _edit_meta(submission(boards), lambda d: d.update(paper=url))
    found = problems(boards)
    assert any(p.startswith(f"{BOARD}/2026-01-02_seed_tiny/metadata.yaml: paper: expected an http(s) URL") for p in found), found


@pytest.mark.parametrize("url", ["https://arxiv.org/abs/2501.00001", "http://example.org/a_(b)?q=1&r=2#s",
                                 "HTTPS://OpenReview.net/forum?id=x"])
def test_plain_web_urls_are_accepted(url):
    assert V.url_problem(url) is None


def test_validate_refuses_a_path_that_is_no_submission(boards, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for path in (elsewhere, tmp_path / "missing", boards / BOARD / "2026-01-02_seed_tiny" / "summary.json"):
        assert lb.main(["validate", "--root", str(boards), str(path)]) == 2
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and out.startswith(f"seedbench leaderboard: error: {path} is not a submission")
    assert lb.main(["validate", "--root", str(boards), str(boards / BOARD)]) == 0  # a board folder is checked
    assert "2 submission(s) checked, 0 problem(s)" in capsys.readouterr().out


# -- Markdown outputs -----------------------------------------------------------------------------------------
def test_md_escape_leaves_no_markup_and_the_html_renderer_reads_it_back():
    text = md_escape(HOSTILE)
    assert "<" not in text and ">" not in text and "|" not in text and "\n" not in text
    assert "\\`x\\`" in text and "\\*b\\*" in text and "\\[l\\]" in text and "\\#" in text
    assert _inline(text) == ("&lt;img src=x onerror=alert(1)&gt;|cell # heading `x` *b* [l](javascript:alert(1)) "
                             "&amp; done")
    assert md_code("<b>") == "`<b>`" and md_code("a`b") == "a\\`b" and md_code("a\nb") == "a b"


def test_leaderboard_pages_show_submission_strings_literally(boards, tmp_path):
    _edit_meta(submission(boards), lambda d: d.update(method=HOSTILE, compute={"gpu<": "a|b"}, notes=HOSTILE,
                                                      code="https://example.org/a(b)"))
    _edit_summary(submission(boards), lambda d: d.update(notes=HOSTILE))
    assert problems(boards) == []
    lb.build(boards)
    readme = (boards / "README.md").read_text()
    assert "<img" not in readme and "&lt;img src=x onerror=alert(1)&gt;&#124;cell \\# heading" in readme
    assert "\n# heading" not in readme
    rows = [line for line in readme.splitlines() if line.startswith("| ") and "tiny" in line]
    assert rows and all(line.count(" | ") == rows[0].count(" | ") for line in rows)  # no cell was split
    assert "[code](https://example.org/a%28b%29)" in readme
    page = (boards / "index.html").read_text()
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;|cell # heading" in page


def test_report_md_shows_run_strings_literally(tmp_path):
    import re

    from seedbench.report import build_report, synthetic

    env, task_type, model = "env<script>alert(1)</script>|x", "pick<b>|\n# t", "m`<i>`"
    for agent in ("grpo", "seed"):
        for seed in (0, 1):
            run = synthetic.write_run(tmp_path / "runs" / f"{agent}{seed}", env=env, agent=agent, seed=seed,
                                      iterations=2, model=model, task_types=(task_type, "look"))
            if agent == "seed":  # a skill that would be HTML and a list inside the quote
                lines = (run / "skills.jsonl").read_text().splitlines()
                lines = [json.dumps({**json.loads(line), "skill": "<img src=x onerror=alert(1)>\n- step"})
                         for line in lines]
                (run / "skills.jsonl").write_text("\n".join(lines) + "\n")
    files = build_report([tmp_path / "runs"], tmp_path / "report", plots=False, n_resamples=200)
    md = files.markdown.read_text()
    assert not re.search(r"<(script|img|b|i)\b", md), [line for line in md.splitlines() if "<" in line][:3]
    assert "env&lt;script&gt;alert(1)&lt;/script&gt;&#124;x" in md and "> &lt;img src=x" in md
    lines = md.splitlines()
    tables = re.findall(r"(?m)((?:^\|.*\n)+)", md)
    assert len(tables) > 5
    for table in tables:  # no string from a run split a cell: every row has its header's column count
        counts = {row.replace("\\|", "").count("|") for row in table.splitlines()}
        assert len(counts) == 1, table
    assert not any(line.startswith("# t") for line in lines)
    page = files.html.read_text()
    assert not re.search(r"<(script|img|b|i)\b", page.split("<style>")[0] + page.split("</style>")[1])


def test_run_files_nested_too_deep_read_as_corrupt(tmp_path):
    from seedbench.jsonio import read_json, read_jsonl

    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "summary.json").write_text('{"a": ' + deep + "}")
    (tmp_path / "metrics.jsonl").write_text(deep + '\n{"iteration": 1}\n')
    assert read_json(tmp_path / "summary.json") == {}
    assert list(read_jsonl(tmp_path / "metrics.jsonl")) == [{"iteration": 1}]
