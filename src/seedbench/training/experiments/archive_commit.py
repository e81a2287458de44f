"""``archive_commit: true``: each run copied into an experiment's archive is committed to git at once.

A study on a machine that may vanish keeps only what is committed: archiving a finished run's logs into the
repository and committing them in the same breath means a lost machine costs the runs in progress, never the
finished ones. Only the archive folder is committed (``git commit -- <folder>``), so whatever else is staged
in the repository stays staged and out of the commit. A failure (not a git work tree, git missing, a hook
refusing) is one line for the driver to print; the runs and the archive are unaffected.
"""

from __future__ import annotations

import subprocess
from pathlib import Path


def commit_archive(folder: Path, runs: list[str], experiment: str) -> str:
    """Commit `folder` (the runs `runs` just archived there) and return the line to print."""
    message = f"{experiment}: archive {', '.join(runs)}"
    try:
        top = _git(folder, "rev-parse", "--show-toplevel").strip()
        _git(Path(top), "add", "--", str(folder))
        if not _git(Path(top), "status", "--porcelain", "--", str(folder)).strip():
            return f"archive: {folder} has nothing new to commit"
        _git(Path(top), "commit", "-q", "-m", message, "--", str(folder))
        head = _git(Path(top), "rev-parse", "--short", "HEAD").strip()
    except (OSError, subprocess.CalledProcessError) as err:
        detail = getattr(err, "stderr", "") or str(err)
        return f"archive: WARNING could not commit {folder} ({' '.join(str(detail).split())[:200]}); the logs are kept, commit them by hand"
    return f"archive: committed {', '.join(runs)} as {head}"


def ignored_by_git(folder: Path) -> str | None:
    """The .gitignore rule that would keep `folder`'s files out of every archive commit, or None (not ignored,
    or not in a git work tree: `commit_archive` says so when it is reached). Checked before any run starts, so
    a study does not run for hours and then fail to commit."""
    probe = folder / "summary.json"
    try:
        top = Path(_git(_existing_parent(folder), "rev-parse", "--show-toplevel").strip())
        rule = subprocess.run(["git", "check-ignore", "-v", "--", str(probe)], cwd=top, capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    if rule.returncode != 0:  # 1: not ignored (a `!` rule that lets it through included)
        return None
    return rule.stdout.split("\t")[0].strip() or "?"


def _existing_parent(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout
