"""Validation of leaderboard submissions: every problem is reported with its file and field path.

Checked, per submission folder: the folder name (``<YYYY-MM-DD>_<agent>_<model>``); that it sits in a
known board; file sizes; symlinks and declared artifact paths that escape the folder; that
summary.json and metadata.yaml parse and have every required field with the right type; that the
env version, base model and budget match the board; for seedbench results, enough distinct seeds, each
with a finite number in [0, 1] for every board metric, a consistent curve, the board's eval task-list
hash, equal to the hash of its task ids and data checksum (`seedbench.provenance.task_list_hash`), and
a complete protocol card with a non-empty data checksum; for paper-reported rows, numeric reported
values. Across a board: all seedbench submissions were evaluated on the same task list.

Submissions arrive from strangers, so nothing in one may stop the others being checked: files nested
deeper than `MAX_DEPTH` (or holding more than `MAX_VALUES` values) are refused before any check walks
them, and any other error while checking a submission becomes a problem of that submission. Paper and
code links are parsed (`url_problem`), not matched by prefix.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from seedbench.leaderboard.schema import (
    FOLDER_RE, MAX_FILE_BYTES, MAX_TOTAL_BYTES, METADATA_FILE, SCHEMA, SOURCES, SUMMARY_FILE, Board, Problem, slug,
)
from seedbench.paths import UnsafePathError, inside
from seedbench.provenance import task_list_hash

METADATA_FIELDS = {"method", "authors", "paper", "code", "compute", "reproduced", "source", "artifacts", "notes"}
METADATA_REQUIRED = ("method", "authors", "compute", "reproduced", "source")
SUMMARY_COMMON = {"schema", "board", "source", "agent", "model", "env", "env_id", "budget", "notes"}
SUMMARY_SEEDBENCH = SUMMARY_COMMON | {"seedbench_version", "git_hash", "eval_task_hash", "eval_task_ids", "protocol",
                                      "seeds", "arm", "overrides"}
"""``arm`` and ``overrides``: an experiment arm's label and its config overrides (`seedbench.training.experiments
.arm`), so a GRPO control with ``optim.lr: 0`` is its own row, filed under its label."""
SUMMARY_PAPER = SUMMARY_COMMON | {"reported", "where", "protocol"}
PAPER_PROTOCOL_INTS = ("max_steps", "updates", "tasks_per_batch", "group_size", "seeds")
PAPER_PROTOCOL_TEXTS = ("model", "framework", "framework_commit", "eval_split")
"""A paper row's ``protocol``: what its number was measured under (null = the paper does not say). The
board groups paper rows by ``max_steps``, since success under another step limit is another quantity."""
PROTOCOL_REQUIRED = ("num_tasks", "max_steps", "temperature", "data_checksum")
AVERAGES = ("micro", "macro", "unknown")
MAX_DEPTH = 32
"""Nesting levels a submission file may have: a summary needs 5 (seeds[i].curve["eval/..."][j])."""
MAX_VALUES = 1_000_000
"""Values (containers and scalars) a submission file may hold, YAML aliases counted each time they are used."""
URL_SCHEMES = ("https", "http")
_URL_FORBIDDEN = set('<>"`{}|\\^')  # never literal in a URL (RFC 3986); they would also break a Markdown link


@dataclass
class Submission:
    """A parsed submission folder (fields are None when the file could not be read)."""

    path: Path
    board_name: str
    summary: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def source(self) -> str | None:
        if isinstance(self.metadata, dict) and self.metadata.get("source") in SOURCES:
            return self.metadata["source"]
        if isinstance(self.summary, dict) and self.summary.get("source") in SOURCES:
            return self.summary["source"]
        return None

    @property
    def valid(self) -> bool:
        return not self.problems


def _key(name: str) -> str:
    """Field path component: plain names as .name, metric names (with slashes) as ["name"]."""
    return f".{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else f'["{name}"]'


def _describe(value: Any) -> str:
    text = repr(value)
    return (text[:40] + "…" if len(text) > 40 else text) + f" ({type(value).__name__})"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Checker:
    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def add(self, where: str, message: str) -> None:
        self.problems.append(Problem(self.file, where.lstrip("."), message))

    def rate(self, where: str, value: Any) -> None:
        if not _is_number(value):
            self.add(where, f"expected a number in [0, 1], got {_describe(value)}")
        elif not 0 <= value <= 1:
            self.add(where, f"expected a success rate in [0, 1] (a fraction, not a percentage), got {value}")

    def string(self, where: str, value: Any, required: bool = True) -> bool:
        if value is None and not required:
            return True
        if not isinstance(value, str) or not value.strip():
            self.add(where, f"expected a non-empty string, got {_describe(value)}")
            return False
        return True


# ----------------------------------------------------------------------------------------------------
# Files


def _check_files(path: Path, root: Path) -> list[Problem]:
    problems = []
    total = 0
    folder = path.resolve()
    for item in sorted(path.rglob("*")):
        rel = item.relative_to(root).as_posix()
        if item.is_symlink():
            target = item.resolve()
            if not target.is_relative_to(folder):
                problems.append(Problem(rel, "", f"symlink points outside the submission folder (to {target})"))
            else:
                problems.append(Problem(rel, "", "symlinks are not allowed; commit the file itself"))
            continue
        if item.is_file():
            size = item.stat().st_size
            total += size
            if size > MAX_FILE_BYTES:
                problems.append(Problem(rel, "", f"file is {size:,} bytes; the limit is {MAX_FILE_BYTES:,} "
                                                 "(keep curves to eval points; no checkpoints or logs)"))
    if total > MAX_TOTAL_BYTES:
        problems.append(Problem(path.relative_to(root).as_posix(), "",
                                f"submission folder holds {total:,} bytes; the limit is {MAX_TOTAL_BYTES:,}"))
    return problems


def _read(path: Path, root: Path, kind: str) -> tuple[Any, list[Problem]]:
    rel = path.relative_to(root).as_posix()
    if not path.is_file():
        return None, [Problem(rel, "", f"missing: a submission needs {path.name}")]
    if path.stat().st_size > MAX_FILE_BYTES:
        return None, []  # reported by _check_files; don't parse huge files
    text = path.read_text(encoding="utf-8", errors="replace")
    too_deep = Problem(rel, "", f"nested more than {MAX_DEPTH} levels deep; a submission file is a few levels of "
                                "mappings and lists")
    if kind == "json":
        try:
            data = json.loads(text)
        except RecursionError:
            return None, [too_deep]
        except ValueError as err:  # JSONDecodeError, or an integer too long to convert
            return None, [Problem(rel, "", f"not valid JSON ({err})")]
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except RecursionError:
            return None, [too_deep]
        except (yaml.YAMLError, ValueError) as err:
            return None, [Problem(rel, "", f"not valid YAML ({' '.join(str(err).split())})")]
    shape = _shape_problem(data)
    if shape:
        return None, [Problem(rel, "", shape)]
    if not isinstance(data, dict):
        return None, [Problem(rel, "", f"expected a mapping at the top level, got {type(data).__name__}")]
    return data, []


def _shape_problem(data: Any) -> str | None:
    """Why `data` is too deep or too big to check (None when it is neither), found without recursion."""
    stack = [(data, 1)]
    seen = 0
    while stack:
        value, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            return f"holds more than {MAX_VALUES:,} values (YAML aliases count each use)"
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                return (f"nested more than {MAX_DEPTH} levels deep; a submission file is a few levels of mappings "
                        "and lists")
            children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    return None


def url_problem(value: Any) -> str | None:
    """Why `value` is not a plain web link (None when it is one): an http(s) scheme, a host, and no
    whitespace, control characters or characters a URL never holds literally. Parsed with
    `urllib.parse.urlsplit`, so ``javascript:``, ``data:``, ``https:evil`` or ``https:///x`` are refused."""
    expected = f"expected an http(s) URL or null, got {_describe(value)}"
    if not isinstance(value, str):
        return expected
    bad = sorted({ch for ch in value if ch.isspace() or unicodedata.category(ch)[0] == "C" or ch in _URL_FORBIDDEN})
    if bad:
        return f"{expected}: it contains {', '.join(map(repr, bad))}"
    try:
        parts = urlsplit(value)
        parts.port  # a malformed port raises here
    except ValueError as err:
        return f"{expected} ({err})"
    if parts.scheme.lower() not in URL_SCHEMES:
        return f"{expected} (scheme {parts.scheme or 'missing'!r})"
    if not parts.hostname or "@" in parts.netloc:
        return f"{expected} (no host name, or a user name before it)"
    return None


# ----------------------------------------------------------------------------------------------------
# metadata.yaml


def _check_metadata(meta: dict[str, Any], path: Path, root: Path, file: str) -> list[Problem]:
    c = _Checker(file)
    for key in sorted(set(meta) - METADATA_FIELDS, key=str):  # YAML keys may be numbers or null
        c.add(str(key), f"unknown field; valid fields: {', '.join(sorted(METADATA_FIELDS))}")
    for key in METADATA_REQUIRED:
        if key not in meta:
            c.add(key, "required field is missing")
    if "method" in meta:
        c.string("method", meta["method"])
    if "authors" in meta:
        authors = meta["authors"]
        if not isinstance(authors, list) or not authors:
            c.add("authors", f"expected a non-empty list of names, got {_describe(authors)}")
        else:
            for i, name in enumerate(authors):
                c.string(f"authors[{i}]", name)
    for key in ("paper", "code"):
        value = meta.get(key)
        problem = None if value is None else url_problem(value)
        if problem:
            c.add(key, problem)
    if "compute" in meta and not (isinstance(meta["compute"], dict) or (isinstance(meta["compute"], str) and meta["compute"].strip())):
        c.add("compute", f"expected a description (e.g. '4x A100, 30 GPU-hours') or a mapping, got {_describe(meta['compute'])}")
    if "reproduced" in meta and not isinstance(meta["reproduced"], bool):
        c.add("reproduced", f"expected true or false, got {_describe(meta['reproduced'])}")
    if "source" in meta and meta["source"] not in SOURCES:
        c.add("source", f"expected one of {', '.join(SOURCES)}, got {_describe(meta['source'])}")
    if meta.get("notes") is not None and not isinstance(meta["notes"], str):
        c.add("notes", f"expected a string, got {_describe(meta['notes'])}")
    artifacts = meta.get("artifacts")
    if artifacts is not None:
        if not isinstance(artifacts, list):
            c.add("artifacts", f"expected a list of paths inside the submission folder, got {_describe(artifacts)}")
        else:
            for i, item in enumerate(artifacts):
                if not isinstance(item, str) or not item:
                    c.add(f"artifacts[{i}]", f"expected a relative path, got {_describe(item)}")
                    continue
                try:
                    target = inside(path, item)
                except UnsafePathError as err:
                    c.add(f"artifacts[{i}]", f"path {item!r} escapes the submission folder ({err})")
                    continue
                if not target.is_file():
                    c.add(f"artifacts[{i}]", f"file {item!r} does not exist in the submission folder")
    return c.problems


# ----------------------------------------------------------------------------------------------------
# summary.json


def _check_identity(s: dict[str, Any], sub: Submission, board: Board | None, boards: dict[str, Board], c: _Checker,
                    meta_source: str | None) -> None:
    if s.get("schema") != SCHEMA:
        c.add("schema", f"expected {SCHEMA!r}, got {_describe(s.get('schema'))}")
    declared = s.get("board")
    if declared is None:
        c.add("board", "required field is missing")
    elif declared not in boards:
        known = ", ".join(sorted(boards)) or "none"
        c.add("board", f"unknown board {declared!r}; known boards: {known}")
    elif declared != sub.board_name:
        c.add("board", f"summary is for board {declared!r} but the folder is filed under {sub.board_name!r}")
    if s.get("source") not in SOURCES:
        c.add("source", f"expected one of {', '.join(SOURCES)}, got {_describe(s.get('source'))}")
    elif meta_source in SOURCES and s["source"] != meta_source:
        c.add("source", f"summary says {s['source']!r} but metadata.yaml says {meta_source!r}")
    for key in ("agent", "model"):
        if key not in s:
            c.add(key, "required field is missing")
        else:
            c.string(key, s[key])
    match = FOLDER_RE.match(sub.name)
    arm = s.get("arm")
    if arm is not None:
        # deferred: the experiments package __init__ loads its driver, which imports report and leaderboard
        from seedbench.training.experiments.arm import label_problem

        if label_problem(arm):
            c.add("arm", label_problem(arm))
        elif match and slug(arm) != match.group(2).lower():
            c.add("arm", f"arm {arm!r} does not match the folder name (expected …_{slug(arm)}_…)")
        if not isinstance(s.get("overrides", {}), dict):
            c.add("overrides", f"expected a mapping of config keys to values, got {_describe(s.get('overrides'))}")
    elif match and isinstance(s.get("agent"), str) and slug(s["agent"]) != match.group(2).lower():
        c.add("agent", f"agent {s['agent']!r} does not match the folder name (expected …_{slug(s['agent'])}_…)")
    if match and isinstance(s.get("model"), str) and slug(s["model"]) != match.group(3).lower():
        c.add("model", f"model {s['model']!r} does not match the folder name (expected …_{slug(s['model'])})")
    if board is None:
        return
    if isinstance(s.get("model"), str) and not board.model_matches(s["model"]):
        c.add("model", f"board {board.name!r} is for base model {board.model!r}, got {s['model']!r}")


def _check_seedbench(s: dict[str, Any], board: Board | None, c: _Checker) -> None:
    """Every problem of a seedbench submission `s` (against `board` when known), field by field."""
    for key in sorted(set(s) - SUMMARY_SEEDBENCH):
        c.add(key, f"unknown field for a seedbench submission; valid fields: {', '.join(sorted(SUMMARY_SEEDBENCH))}")
    for key in ("env_id", "budget", "eval_task_hash", "eval_task_ids", "protocol", "seeds"):
        if key not in s:
            c.add(key, "required field is missing")
    if board is not None:
        _check_board_fit(s, board, c)
    if "eval_task_hash" in s:
        _check_task_hashes(s["eval_task_hash"], board, c)
    if "protocol" in s:
        _check_protocol(s["protocol"], c)
    _check_task_ids(s, c)
    if "seeds" in s:
        _check_seeds(s["seeds"], board, c)


def _check_board_fit(s: dict[str, Any], board: Board, c: _Checker) -> None:
    """The env and the budget must be the board's."""
    if "env_id" in s and s["env_id"] != board.env_id:
        c.add("env_id", f"board {board.name!r} is for env {board.env_id!r}, got {_describe(s['env_id'])}")
    if "budget" not in s:
        return
    budget = s["budget"]
    if not isinstance(budget, dict):
        c.add("budget", f"expected a mapping like {{iterations: N}}, got {_describe(budget)}")
        return
    for key in ("iterations", "trajectories"):
        if key in board.budget and budget.get(key) != board.budget[key]:
            c.add(f"budget.{key}", f"board {board.name!r} requires {board.budget[key]}, got {_describe(budget.get(key))}")


def _check_task_hashes(hashes: Any, board: Board | None, c: _Checker) -> None:
    """A task-list hash for each of the board's splits, equal to the board's where it has one."""
    if not isinstance(hashes, dict):
        c.add("eval_task_hash", f"expected a mapping split -> hash, got {_describe(hashes)}")
        return
    for split in board.splits if board is not None else []:
        value = hashes.get(split)
        if not isinstance(value, str) or not value:
            c.add(f"eval_task_hash.{split}", f"missing the task-list hash of split {split!r}")
        elif board.eval_task_hash.get(split) and value != board.eval_task_hash[split]:
            c.add(f"eval_task_hash.{split}", f"mismatched task list: board {board.name!r} evaluates on "
                  f"{board.eval_task_hash[split]!r}, submission on {value!r}")


def _check_protocol(protocol: Any, c: _Checker) -> None:
    """The protocol card: its required fields, with values of the right kind."""
    if not isinstance(protocol, dict):
        c.add("protocol", f"expected a protocol card (mapping), got {_describe(protocol)}")
        return
    for key in PROTOCOL_REQUIRED:
        if key not in protocol:
            c.add(f"protocol.{key}", "required field of the protocol card is missing")
    if "split" not in protocol and "splits" not in protocol:
        c.add("protocol.splits", "required field of the protocol card is missing")
    for key in ("num_tasks", "max_steps"):
        if key in protocol and not (isinstance(protocol[key], int) and not isinstance(protocol[key], bool) and protocol[key] > 0):
            c.add(f"protocol.{key}", f"expected a positive integer, got {_describe(protocol[key])}")
    if "temperature" in protocol and not _is_number(protocol["temperature"]):
        c.add("protocol.temperature", f"expected a number, got {_describe(protocol['temperature'])}")
    if "data_checksum" in protocol and not (isinstance(protocol["data_checksum"], str) and protocol["data_checksum"]):
        c.add("protocol.data_checksum", f"expected the env's data checksum (a non-empty string), got "
              f"{_describe(protocol['data_checksum'])}")


def _check_seeds(seeds: Any, board: Board | None, c: _Checker) -> None:
    """Per-seed results: distinct integer seeds, each with every board metric in `final` and a curve;
    at least the board's number of seeds."""
    if not isinstance(seeds, list):
        c.add("seeds", f"expected a list of per-seed results, got {_describe(seeds)}")
        return
    metrics = board.metrics if board is not None else []
    seen: dict[int, int] = {}
    for i, entry in enumerate(seeds):
        where = f"seeds[{i}]"
        if not isinstance(entry, dict):
            c.add(where, f"expected a mapping with seed, final and curve, got {_describe(entry)}")
            continue
        seed = entry.get("seed")
        if not (isinstance(seed, int) and not isinstance(seed, bool)):
            c.add(f"{where}.seed", f"expected an integer seed, got {_describe(seed)}")
        elif seed in seen:
            c.add(f"{where}.seed", f"seed {seed} appears twice (also seeds[{seen[seed]}])")
        else:
            seen[seed] = i
        _check_seed_final(entry.get("final"), metrics, where, c)
        curve = entry.get("curve")
        if curve is None:
            c.add(f"{where}.curve", "required field is missing (eval points: x values and metric values)")
        elif not isinstance(curve, dict):
            c.add(f"{where}.curve", f"expected a mapping of equal-length lists, got {_describe(curve)}")
        else:
            _check_curve(curve, f"{where}.curve", c)
    if board is not None and len(seen) < board.min_seeds:
        c.add("seeds", f"missing seeds: {len(seen)} distinct seed(s) given, board {board.name!r} requires at "
                       f"least {board.min_seeds}")


def _check_seed_final(final: Any, metrics: list[str], where: str, c: _Checker) -> None:
    """One seed's final metrics: every board metric present, every value a rate."""
    if not isinstance(final, dict):
        c.add(f"{where}.final", f"expected a mapping metric -> value, got {_describe(final)}")
        return
    for metric in metrics:
        if metric not in final:
            c.add(f"{where}.final{_key(metric)}", "missing: the board reports this metric")
    for metric, value in final.items():
        c.rate(f"{where}.final{_key(metric)}", value)


def _check_task_ids(s: dict[str, Any], c: _Checker) -> None:
    """Every eval task-list hash must be `task_list_hash` of its split's task ids and the data checksum."""
    ids, hashes = s.get("eval_task_ids"), s.get("eval_task_hash")
    if "eval_task_ids" not in s or not isinstance(hashes, dict):
        return
    if not isinstance(ids, dict):
        c.add("eval_task_ids", f"expected a mapping split -> list of task ids, got {_describe(ids)}")
        return
    checksum = (s.get("protocol") or {}).get("data_checksum") if isinstance(s.get("protocol"), dict) else None
    for split, digest in hashes.items():
        values = ids.get(split)
        if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
            c.add(f"eval_task_ids.{split}", f"expected the task ids of split {split!r} (a list of strings), got {_describe(values)}")
        elif isinstance(checksum, str) and checksum and digest != task_list_hash(values, checksum):
            c.add(f"eval_task_hash.{split}", f"{digest!r} is not the hash of eval_task_ids.{split} and "
                  f"protocol.data_checksum (they hash to {task_list_hash(values, checksum)!r})")


def _check_curve(curve: dict[str, Any], where: str, c: _Checker) -> None:
    x = curve.get("trajectories")
    if not isinstance(x, list) or not x:
        c.add(f"{where}.trajectories", "expected a non-empty list of trajectory counts (the x axis)")
        return
    for j, value in enumerate(x):
        if not _is_number(value):
            c.add(f"{where}.trajectories[{j}]", f"expected a number, got {_describe(value)}")
            return
    if any(b < a for a, b in zip(x, x[1:])):
        c.add(f"{where}.trajectories", "x values must be non-decreasing")
    for key, values in curve.items():
        if key == "trajectories":
            continue
        if not isinstance(values, list) or len(values) != len(x):
            c.add(f"{where}{_key(key)}", f"expected a list of {len(x)} values (one per x), got {_describe(values)}")
            continue
        for j, value in enumerate(values):
            if key.startswith("eval/"):
                if not _is_number(value) or not 0 <= value <= 1:
                    c.add(f"{where}{_key(key)}[{j}]", f"expected a number in [0, 1], got {_describe(value)}")
                    break
            elif not _is_number(value):
                c.add(f"{where}{_key(key)}[{j}]", f"expected a number, got {_describe(value)}")
                break


def _check_paper(s: dict[str, Any], board: Board | None, c: _Checker) -> None:
    for key in sorted(set(s) - SUMMARY_PAPER):
        c.add(key, f"unknown field for a paper-reported row; valid fields: {', '.join(sorted(SUMMARY_PAPER))}")
    protocol = s.get("protocol")
    if protocol is not None:
        if not isinstance(protocol, dict):
            c.add("protocol", f"expected a mapping of {', '.join(PAPER_PROTOCOL_INTS + PAPER_PROTOCOL_TEXTS)}, "
                              f"got {_describe(protocol)}")
        else:
            for key, value in protocol.items():
                if key in PAPER_PROTOCOL_INTS:
                    if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
                        c.add(f"protocol.{key}", f"expected a positive integer or null, got {_describe(value)}")
                elif key in PAPER_PROTOCOL_TEXTS:
                    if value is not None and not isinstance(value, str):
                        c.add(f"protocol.{key}", f"expected a string or null, got {_describe(value)}")
                else:
                    c.add(f"protocol.{key}", "unknown protocol field; valid: "
                                             f"{', '.join(PAPER_PROTOCOL_INTS + PAPER_PROTOCOL_TEXTS)}")
    reported = s.get("reported")
    if not isinstance(reported, dict) or not reported:
        c.add("reported", f"expected a mapping metric -> {{value, std, n_seeds, average}}, got {_describe(reported)}")
        return
    for metric, entry in reported.items():
        where = f"reported{_key(metric)}"
        if not isinstance(entry, dict):
            c.add(where, f"expected a mapping with value, std, n_seeds, average, got {_describe(entry)}")
            continue
        c.rate(f"{where}.value", entry.get("value"))
        std = entry.get("std")
        if std is not None and not (_is_number(std) and std >= 0):
            c.add(f"{where}.std", f"expected a non-negative number or null, got {_describe(std)}")
        n = entry.get("n_seeds")
        if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
            c.add(f"{where}.n_seeds", f"expected a positive integer or null, got {_describe(n)}")
        if entry.get("average", "unknown") not in AVERAGES:
            c.add(f"{where}.average", f"expected one of {', '.join(AVERAGES)}, got {_describe(entry.get('average'))}")
        extra = sorted(set(entry) - {"value", "std", "n_seeds", "average", "note"})
        if extra:
            c.add(where, f"unknown field(s) {', '.join(extra)}; valid: value, std, n_seeds, average, note")


def read_submission(path: Path, root: Path, boards: dict[str, Board]) -> Submission:
    """Parse and validate one submission folder; an error while checking it is one of its problems."""
    try:
        return _read_submission(path, root, boards)
    except Exception as err:  # noqa: BLE001 - one hostile submission must not stop the others being checked
        sub = Submission(path=path, board_name=path.parent.name)
        sub.problems.append(Problem(path.relative_to(root).as_posix(), "",
                                    f"could not be checked ({type(err).__name__}: {' '.join(str(err).split())[:200]})"))
        return sub


def _read_submission(path: Path, root: Path, boards: dict[str, Board]) -> Submission:
    sub = Submission(path=path, board_name=path.parent.name)
    rel = path.relative_to(root).as_posix()
    match = FOLDER_RE.match(path.name)
    if not match:
        sub.problems.append(Problem(rel, "", "folder name must be <YYYY-MM-DD>_<agent>_<model> "
                                             "(letters, digits, '.', '+', '-' in agent and model)"))
    else:
        try:
            date.fromisoformat(match.group(1))
        except ValueError:
            sub.problems.append(Problem(rel, "", f"{match.group(1)!r} in the folder name is not a valid date"))
    sub.problems.extend(_check_files(path, root))
    summary, problems = _read(path / SUMMARY_FILE, root, "json")
    sub.problems.extend(problems)
    metadata, problems = _read(path / METADATA_FILE, root, "yaml")
    sub.problems.extend(problems)
    sub.summary, sub.metadata = summary, metadata
    if metadata is not None:
        sub.problems.extend(_check_metadata(metadata, path, root, (path / METADATA_FILE).relative_to(root).as_posix()))
    board = boards.get(sub.board_name)
    if board is None:
        sub.problems.append(Problem(rel, "", f"unknown board {sub.board_name!r}: no valid "
                                             f"{sub.board_name}/board.yaml; known boards: {', '.join(sorted(boards)) or 'none'}"))
    if summary is not None:
        c = _Checker((path / SUMMARY_FILE).relative_to(root).as_posix())
        meta_source = metadata.get("source") if isinstance(metadata, dict) else None
        _check_identity(summary, sub, board, boards, c, meta_source)
        if summary.get("source") == "paper-reported":
            _check_paper(summary, board, c)
        elif summary.get("source") == "seedbench":
            _check_seedbench(summary, board, c)
        sub.problems.extend(c.problems)
    return sub
