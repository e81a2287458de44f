"""Names from runs that matplotlib's mathtext, TeX or Markdown would read as markup (``$``, ``_``, ``^``)
are drawn and written literally in a report's figures, report.md and report.html, and never stop a build."""

import html
import re

import matplotlib
from matplotlib.text import Text

from seedbench.report import build_report, plots, synthetic
from seedbench.report.document import md_escape

ENV, MODEL, SPLIT = "env$x^^$", "m_$x$", "te$s_t$"  # "$x^^$" is bad mathtext; "$x$", "$s_t$" are good mathtext
AGENTS = ("_a$b_c^d", "seed-$b_c^d$")  # a "seed-…" name logs SEED signals, so its diagnostics figure is drawn too;
# a name starting with "_" is one matplotlib leaves out of a legend unless it is guarded


def test_plot_titles_labels_and_legends_show_run_names_literally(tmp_path, monkeypatch):
    for agent in AGENTS:
        for seed in (0, 1):
            synthetic.write_run(tmp_path / "runs" / f"{agent[:4]}{seed}", env=ENV, agent=agent, seed=seed,
                                iterations=2, model=MODEL, splits=(SPLIT,))
    drawn = {}
    real_png = plots._png

    def png(fig):  # the texts of each figure as it is saved
        drawn[fig.texts[0].get_text()] = [t for t in fig.findobj(Text) if t.get_text()]
        return real_png(fig)

    monkeypatch.setattr(plots, "_png", png)
    with matplotlib.rc_context({"text.usetex": True}):  # a user's matplotlibrc asking for TeX
        files = build_report([tmp_path / "runs"], tmp_path / "report", n_resamples=200)

    group = f"{ENV} · {MODEL}"
    assert set(drawn) == {group, f"{group} · {SPLIT}", f"{group}: SEED signals"}  # every suptitle, as written
    assert len(files.figures) == 3 and all(f.read_bytes().startswith(b"\x89PNG") for f in files.figures)
    for title, texts in drawn.items():
        legend = {f"{AGENTS[1]} (n=2)"} | (set() if "SEED" in title else {f"{AGENTS[0]} (n=2)"})
        assert legend <= {t.get_text().lstrip("\u200b") for t in texts}
        for text in texts:
            assert not text.get_usetex()
            assert "$" not in text.get_text() or not text.get_parse_math(), text.get_text()  # not mathtext
    assert SPLIT in {t.get_text() for t in drawn[group]}  # the learning-curve panel's title
    assert f"eval success ({SPLIT}, micro)" in {t.get_text() for t in drawn[f"{group} · {SPLIT}"]}

    md = files.markdown.read_text()
    assert f"### {md_escape(ENV)} · {md_escape(MODEL)}" in md and md_escape(AGENTS[0]) in md
    page = files.html.read_text()
    alts = re.findall(r'<img alt="([^"]*)"', page)
    assert len(alts) == 3, alts  # as shown: no "\_" or "&amp;lt;" left by the Markdown escapes
    assert html.unescape(alts[0]).startswith(f"{group}: held-out success")
    assert html.unescape(alts[1]).startswith(f"{group}: eval success on {SPLIT} vs budget")
    assert f"<td>{html.escape(AGENTS[0])}" in page
