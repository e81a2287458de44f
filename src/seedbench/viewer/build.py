"""A run directory → a self-contained, static HTML viewer (``seedbench view RUN``).

Layout of the output directory (default ``<run>/viewer``)::

    index.html          the page: CSS and JavaScript inline, no network, opens from file://
    data/index.js       run header, metrics, chunk list and one compact row per episode (for filters)
    data/chunk_<n>.js   the episodes of one chunk: steps, skill, per-token signals
    frames/<id>.png     the frames episode steps name (vision envs), copied from the run

Data files are JavaScript (``SEEDBENCH_INDEX(...)``, ``SEEDBENCH_CHUNK(n, ...)``) rather than JSON because a
page opened from ``file://`` may load scripts but not fetch files. The page loads ``index.js`` at once and a
chunk only when a page of groups needs it, so a run with many thousands of episodes opens as fast as a
small one. A chunk holds at most `CHUNK_EPISODES` episodes of one (iteration, phase) and never splits a
group. Joins: skills (``skills.jsonl``) and token signals (``token_signals.jsonl``) attach to episodes by
(iteration, episode_id) and (iteration, episode_id, step).

Run directories are shared, so a frame an episode names is read only from inside the run and written only
inside the output folder (`seedbench.paths.inside`); a step naming any other path loses its frame, and the
build says once how many it dropped.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import quote

from seedbench.jsonio import read_json, read_jsonl
from seedbench.paths import UnsafePathError, inside
from seedbench.rollout.prompting import current_observation
from seedbench.viewer.page import PAGE

CHUNK_EPISODES = 200
"""Episodes per data chunk: one chunk is what the browser parses to show a page of groups."""


def build_viewer(run: str | Path, out: str | Path | None = None, chunk_episodes: int = CHUNK_EPISODES) -> Path:
    """Write the viewer of run directory `run` into `out` (default ``<run>/viewer``); returns index.html."""
    run = Path(run)
    if not (run / "episodes.jsonl").is_file():
        raise FileNotFoundError(f"{run} is not a run directory with episodes (no episodes.jsonl); pass a run "
                                "directory written by `seedbench run`")
    out = Path(out) if out is not None else inside(run, "viewer")
    data = out / "data"
    if data.is_symlink():  # replace the link, never empty the folder it points to
        data.unlink()
    elif data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    skills = {(r.get("iteration"), r.get("episode_id")): r for r in read_jsonl(run / "skills.jsonl")}
    signals = {(r.get("iteration"), r.get("episode_id"), r.get("step")): r for r in read_jsonl(run / "token_signals.jsonl")}
    rows: dict[str, list[Any]] = {key: [] for key in ("chunk", "it", "phase", "group", "won", "invalid", "type",
                                                      "skill", "signals")}
    phases: list[str] = []
    types: list[str] = []
    chunks: list[dict[str, Any]] = []
    frames = _Frames(run, out)
    for number, (iteration, phase, episodes) in enumerate(_chunks(read_jsonl(run / "episodes.jsonl"), chunk_episodes)):
        shown = [_episode(e, skills, signals, frames) for e in episodes]
        _write_js(data / f"chunk_{number}.js", f"SEEDBENCH_CHUNK({number}, ", shown)
        chunks.append({"file": f"data/chunk_{number}.js", "iteration": iteration, "phase": phase, "episodes": len(shown)})
        for e in shown:
            rows["chunk"].append(number)
            rows["it"].append(iteration)
            rows["phase"].append(_index(phases, phase))
            rows["group"].append(e["group"])
            rows["won"].append(int(bool(e["won"])))
            rows["invalid"].append(e["invalid"])
            rows["type"].append(_index(types, e["type"] or ""))
            rows["skill"].append(int(e["skill"] is not None))
            rows["signals"].append(int(any("sig" in s for s in e["steps"])))
    frames.copy()
    index = {"run": _header(run), "metrics": list(read_jsonl(run / "metrics.jsonl")), "chunks": chunks,
             "phases": phases, "types": types, "episodes": rows}
    _write_js(data / "index.js", "SEEDBENCH_INDEX(", index)
    page = out / "index.html"
    if page.is_symlink():  # an output folder inside a shared run may hold a planted link
        page.unlink()
    page.write_text(PAGE, encoding="utf-8")
    return page


def _chunks(records: Iterable[dict[str, Any]], size: int) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    """(iteration, phase, episodes) runs of consecutive records, cut at `size` episodes between groups."""
    current: list[dict[str, Any]] = []
    key = None
    for record in records:
        new_key = (record.get("iteration", 0), record.get("phase", ""))
        new_group = not current or record.get("group_id") != current[-1].get("group_id")
        if current and (new_key != key or (len(current) >= size and new_group)):
            yield key[0], key[1], current
            current = []
        key = new_key
        current.append(record)
    if current:
        yield key[0], key[1], current


class _Frames:
    """The frames episode steps name: checked when named, copied into the output folder at the end."""

    def __init__(self, run: Path, out: Path):
        self.run, self.out = run, out
        self.wanted: dict[str, tuple[Path, Path]] = {}  # page-relative URL -> (source, target)
        self.rejected: list[tuple[Any, str]] = []  # (name as written, why)

    def add(self, name: Any) -> str | None:
        """The URL the page shows for frame `name`, or None when the name leaves the run or the output."""
        try:
            if not isinstance(name, str):
                raise UnsafePathError(f"expected a relative path, got {type(name).__name__}")
            source = inside(self.run, name)
            relative = source.resolve().relative_to(self.run.resolve())  # no "..", no links
            target = inside(self.out, relative)
        except UnsafePathError as err:
            self.rejected.append((name, str(err)))
            return None
        url = quote(relative.as_posix())  # "https:/x" stays a file name, never a link off the machine
        self.wanted[url] = (source, target)
        return url

    def copy(self) -> None:
        for source, target in self.wanted.values():
            if source.is_file() and source.resolve() != target.resolve():
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_symlink():
                    target.unlink()
                shutil.copyfile(source, target)
        if self.rejected:
            name, why = self.rejected[0]
            print(f"seedbench: warning: {len(self.rejected)} step frame(s) not shown: their image paths leave the "
                  f"run directory or the output folder (first: {name!r}: {why})", file=sys.stderr)


def _episode(record: dict[str, Any], skills: dict, signals: dict, frames: _Frames) -> dict[str, Any]:
    """The shown fields of one episode record, with its skill and token signals attached."""
    iteration, episode_id = record.get("iteration"), record.get("episode_id")
    skill = skills.get((iteration, episode_id))
    steps = []
    for step in record.get("steps", []):
        prompt = step.get("prompt") or ""
        shown = {"i": step.get("step"), "obs": current_observation(prompt), "prompt": prompt, "out": step.get("output"),
                 "act": step.get("action"), "valid": step.get("valid"), "r": step.get("reward")}
        if step.get("image"):
            url = frames.add(step["image"])
            if url is not None:
                shown["img"] = url
        signal = signals.get((iteration, episode_id, step.get("step")))
        if signal is not None:
            shown["sig"] = {"tokens": signal.get("tokens", []), "signals": signal.get("signals", {})}
        steps.append(shown)
    return {
        "id": episode_id, "it": iteration, "phase": record.get("phase"), "group": record.get("group_id"),
        "task": record.get("task"), "type": record.get("task_type"), "text": record.get("task_text"),
        "won": record.get("won"), "ret": record.get("env_return"), "reward": record.get("reward"),
        "invalid": int(record.get("num_invalid") or 0), "truncated": record.get("truncated"),
        "dropped": record.get("dropped"), "steps": steps,
        "skill": None if skill is None else {"ok": skill.get("ok"), "summary": skill.get("episode_summary"),
                                             "skill": skill.get("episode_skill"), "analyzer": skill.get("analyzer")},
    }


def _header(run: Path) -> dict[str, Any]:
    summary = read_json(run / "summary.json")
    keys = ("env", "env_id", "agent", "seed", "iterations", "iterations_done", "complete", "final", "seedbench_version",
            "git_hash")
    header = {key: summary.get(key) for key in keys if key in summary}
    header["name"] = run.resolve().name
    header["model"] = (summary.get("model") or {}).get("name")
    return header


def _index(values: list[str], value: str) -> int:
    if value not in values:
        values.append(value)
    return values.index(value)


def _write_js(path: Path, call: str, data: Any) -> None:
    # "</" is escaped so text from an episode can never close a <script> element.
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
    path.write_text(f"{call}{text});\n", encoding="utf-8")
