"""The catalogue of a leaderboards root: every board and submission under it, validated
(`load_catalogue`), with the cross-submission checks of one board (a shared eval task list).

Per-submission validation lives in `seedbench.leaderboard.submission`; this module walks the tree and
collects."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seedbench.leaderboard.schema import SUMMARY_FILE, Board, Problem, board_dirs, load_board, submission_dirs
from seedbench.leaderboard.submission import Submission, read_submission


@dataclass
class Catalogue:
    """Everything under a leaderboards root, validated."""

    root: Path
    boards: dict[str, Board]
    submissions: dict[str, list[Submission]]  # board folder name -> submissions
    problems: list[Problem]  # board-level problems and every submission's problems

    def all_submissions(self) -> list[Submission]:
        return [s for name in sorted(self.submissions) for s in self.submissions[name]]


def _cross_checks(board: Board, subs: list[Submission], root: Path) -> None:
    """Seedbench submissions of one board must share the eval task list (when the board pins none)."""
    reference: tuple[str, dict] | None = None
    for sub in subs:
        if sub.source != "seedbench" or not isinstance(sub.summary, dict):
            continue
        hashes = sub.summary.get("eval_task_hash")
        if not isinstance(hashes, dict):
            continue
        if reference is None:
            reference = (sub.name, hashes)
            continue
        for split in board.splits:
            if board.eval_task_hash.get(split):
                continue  # already compared with the board's pinned hash
            ours, theirs = hashes.get(split), reference[1].get(split)
            if ours and theirs and ours != theirs:
                sub.problems.append(Problem((sub.path / SUMMARY_FILE).relative_to(root).as_posix(),
                                            f"eval_task_hash.{split}",
                                            f"mismatched task list: {ours!r} differs from {theirs!r} of "
                                            f"{reference[0]} on the same board"))


def load_catalogue(root: str | Path, only: list[Path] | None = None) -> Catalogue:
    """Read and validate every board and submission under ``root`` (or only the given folders)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no leaderboards directory at {root}")
    boards: dict[str, Board] = {}
    problems: list[Problem] = []
    board_paths = board_dirs(root)
    for path in board_paths:
        board, board_problems = load_board(path, root)
        problems.extend(board_problems)
        if board is not None:
            boards[board.name] = board
    submissions: dict[str, list[Submission]] = {}
    for path in board_paths:
        subs = [read_submission(sub_path, root, boards) for sub_path in submission_dirs(path)]
        if path.name in boards:
            _cross_checks(boards[path.name], subs, root)
        submissions[path.name] = subs
    if only:
        wanted = {p.resolve() for p in only}
        known = {root.resolve(), *(p.resolve() for p in board_paths),
                 *(s.path.resolve() for subs in submissions.values() for s in subs)}
        for p in only:
            if p.resolve() not in known:
                raise ValueError(f"{p} is not a submission or board folder under {root}; pass "
                                 "<board>/<date>_<agent>_<model>, a board folder, or nothing for all of them")
        submissions = {name: [s for s in subs if s.path.resolve() in wanted or s.path.parent.resolve() in wanted]
                       for name, subs in submissions.items()}
        problems = [p for p in problems if any((root / p.file).resolve().is_relative_to(w) for w in wanted)]
    for subs in submissions.values():
        for sub in subs:
            problems.extend(sub.problems)
    return Catalogue(root, boards, submissions, problems)
