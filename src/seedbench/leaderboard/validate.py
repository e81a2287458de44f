"""Leaderboard validation under its public path: one submission (`seedbench.leaderboard.submission`) and a
tree of boards (`seedbench.leaderboard.catalogue`), re-exported for callers and plugins that import them
from here."""

from seedbench.leaderboard.catalogue import Catalogue, load_catalogue
from seedbench.leaderboard.submission import *  # noqa: F403 - the whole public surface
from seedbench.leaderboard.submission import MAX_DEPTH, MAX_VALUES, Submission, read_submission

__all__ = ["Catalogue", "MAX_DEPTH", "MAX_VALUES", "Submission", "load_catalogue", "read_submission"]
