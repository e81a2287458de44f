"""Report figures (matplotlib, Agg backend, imported only when a figure is drawn).

Each function returns PNG bytes. Output is deterministic for a given matplotlib version: no
timestamps or software tags in the PNG, fixed colours per agent name order.

Env, model, agent, arm and split names come from runs, so they are someone else's text: every title,
label and legend entry they enter is drawn literally (`_literal`: no mathtext, so ``$``, ``_`` and ``^``
are plain characters), and figures are drawn without TeX whatever the user's matplotlibrc says
(`_without_tex`).
"""

from __future__ import annotations

import functools
import io
from typing import Sequence

import numpy as np

from seedbench import stats
from seedbench.report.data import Run
from seedbench.report.tables import SEED_DIAGNOSTICS, X_AXES, curve, diagnostic_metric, train_curve


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _without_tex(draw):
    """Draw a figure with ``text.usetex`` off: TeX would typeset every label, and stop at a name holding
    ``_``, ``^`` or ``#``; without it figures also look the same on every machine."""

    @functools.wraps(draw)
    def drawn(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.usetex": False}):
            return draw(*args, **kwargs)

    return drawn


def _literal(*texts) -> None:
    """Draw these matplotlib texts as written: a name such as ``a$b_c^d$`` is not mathtext."""
    for text in texts:
        text.set_parse_math(False)


def _label(name: str) -> str:
    """A legend label that shows `name`: matplotlib leaves out of the legend every label starting with
    ``_``, so such a name gets a zero-width space in front (drawn as nothing)."""
    return "\u200b" + name if name.startswith("_") else name


def _legend(ax) -> None:
    _literal(*ax.legend(loc="best", fontsize=8).get_texts())  # agent and arm names


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    _pyplot().close(fig)
    return buffer.getvalue()


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf"]
    return {agent: palette[i % len(palette)] for i, agent in enumerate(sorted(agents))}


def _band(ax, curves, label: str, color: str) -> bool:
    curves = [c for c in curves if c[0].size]
    if not curves:
        return False
    try:
        band = stats.curve_band(curves)
    except ValueError:
        return False
    if band.grid.size == 1:
        ax.errorbar(band.grid, band.mean, fmt="o", color=color, label=_label(label))
        return True
    ax.plot(band.grid, band.mean, color=color, label=_label(f"{label} (n={len(curves)})"), lw=2)
    ok = ~np.isnan(band.low)
    if ok.any():
        ax.fill_between(band.grid[ok], band.low[ok], band.high[ok], color=color, alpha=0.2, lw=0)
    return True


@_without_tex
def sample_efficiency(agents: dict[str, list[Run]], split: str, title: str,
                      colors: dict[str, str] | None = None) -> bytes:
    """Eval success vs trajectories, env steps and generated tokens: mean over seeds with a 95 %
    bootstrap band, each seed interpolated onto a common grid."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(X_AXES), figsize=(4.2 * len(X_AXES), 3.4), sharey=True)
    colors = colors or agent_colors(agents)
    for ax, (x, label) in zip(axes, X_AXES.items()):
        for agent, runs in sorted(agents.items()):
            _band(ax, [curve(r, split, x) for r in runs], agent, colors[agent])
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
        ax.ticklabel_format(axis="x", style="sci", scilimits=(-3, 4))
    _literal(axes[0].set_ylabel(f"eval success ({split}, micro)"))
    axes[0].set_ylim(-0.02, 1.02)
    _legend(axes[0])
    _literal(fig.suptitle(title))
    return _png(fig)


@_without_tex
def seed_diagnostics(agents: dict[str, list[Run]], title: str, colors: dict[str, str] | None = None) -> bytes | None:
    """SEED's training signals vs trajectories, mean and band over seeds; None if nothing to plot."""
    everything = [r for runs in agents.values() for r in runs]
    metrics = [(m, label) for label, names, _ in SEED_DIAGNOSTICS
               if (m := diagnostic_metric(everything, names)) is not None]
    if not metrics:
        return None
    plt = _pyplot()
    cols = min(3, len(metrics))
    rows = (len(metrics) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    colors = colors or agent_colors(agents)
    for ax, (metric, label) in zip(axes.flat, metrics):
        for agent, runs in sorted(agents.items()):
            _band(ax, [train_curve(r, metric) for r in runs], agent, colors[agent])
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("trajectories")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(metrics):]:
        ax.axis("off")
    _legend(axes.flat[0])
    _literal(fig.suptitle(title))
    fig.tight_layout()
    return _png(fig)


CONTROL_COLOR = "#7f7f7f"


@_without_tex
def learning_curves(curves: dict[str, "object"], splits: list[str], title: str, controls: set[str],
                    colors: dict[str, str] | None = None) -> bytes:
    """Held-out success vs training iteration, one panel per eval split: every arm's mean over seeds with
    its 95 % band (`tables.learning_curve_table` rows, keyed by split); control arms dashed and grey, so
    what the learning arms add over no learning is read off directly."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(splits), figsize=(5.2 * len(splits), 3.6), sharey=True, squeeze=False)
    arms = sorted({a for table in curves.values() for a in table["agent"]})
    colors = colors or agent_colors([a for a in arms if a not in controls])
    for ax, split in zip(axes[0], splits):
        table = curves[split]
        for arm in arms:
            rows = table[table["agent"] == arm].sort_values("iteration")
            if not len(rows):
                continue
            control = arm in controls
            color = CONTROL_COLOR if control else colors[arm]
            x, mean = rows["iteration"].to_numpy(float), rows["mean"].to_numpy(float)
            low, high = rows["low"].to_numpy(float), rows["high"].to_numpy(float)
            seeds = int(rows["seeds"].max())
            ax.plot(x, mean, color=color, lw=1.6 if control else 2, ls="--" if control else "-", marker="o", ms=3,
                    label=_label(f"{arm}{' (control)' if control and 'control' not in arm else ''} (n={seeds})"))
            ok = ~np.isnan(low)
            if ok.any():
                ax.fill_between(x[ok], low[ok], high[ok], color=color, alpha=0.12 if control else 0.2, lw=0)
        _literal(ax.set_title(split, fontsize=10))
        ax.set_xlabel("iteration (RL update)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("held-out success (micro)")
    axes[0][0].set_ylim(-0.02, 1.02)
    _legend(axes[0][0])
    _literal(fig.suptitle(title))
    return _png(fig)
