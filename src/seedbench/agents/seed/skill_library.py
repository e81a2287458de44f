"""A fixed skill library retrieved by task similarity (the "w/o on-policy skills" ablation of
docs/method.md §6 and the Skill-Prompt baseline).

The library is a JSONL file of analysed episodes, normally the stage-1 annotations written by
``seedbench sft-analyzer`` (``annotations.jsonl``); a SEED run's ``skills.jsonl`` works too. A record
needs a skill (``episode_skill`` or ``skill``) and may carry ``task_text``, ``first_observation`` and
``won``.

Retrieval key = task text + the episode's first observation: in envs whose task text is always the same
(Sokoban: "push every box onto a target") the starting room is what tells tasks apart. Similarity is the
cosine of TF-IDF vectors over words and character 4-grams of the whitespace-normalised key — no
embedding model, deterministic, and cheap enough to run per episode. When the trajectory's outcome is
known (the static ablation), entries with the same outcome are preferred, so a failure still gets
avoidance rules and a success a workflow, as the on-policy analyzer would give them.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from seedbench.jsonio import read_jsonl

_WORD_RE = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True)
class SkillEntry:
    skill: str
    task_text: str = ""
    first_observation: str = ""
    won: bool | None = None
    summary: str = ""
    source: str = ""  # e.g. the task key of the annotated episode

    @property
    def key(self) -> str:
        return f"{self.task_text}\n{self.first_observation}"


def _features(text: str) -> Counter:
    normalised = " ".join(text.lower().split())
    features = Counter(f"w:{w}" for w in _WORD_RE.findall(normalised))
    features.update(f"c:{normalised[i : i + 4]}" for i in range(max(len(normalised) - 3, 0)))
    return features


class SkillLibrary:
    def __init__(self, entries: list[SkillEntry]):
        if not entries:
            raise ValueError("a skill library needs at least one entry with a non-empty skill")
        self.entries = entries
        counts = [_features(e.key) for e in entries]
        document_frequency = Counter(f for c in counts for f in c)
        n = len(entries)
        self.idf = {f: math.log((1 + n) / (1 + df)) + 1.0 for f, df in document_frequency.items()}
        self.vectors = [self._weigh(c) for c in counts]

    @classmethod
    def load(cls, path: str | Path) -> "SkillLibrary":
        """Read a JSONL library (or a directory holding ``annotations.jsonl``); records without a skill,
        or marked ``ok: false``, are skipped."""
        path = Path(path)
        if path.is_dir():
            path = path / "annotations.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"skill library not found: {path} (write one with `seedbench sft-analyzer`)")
        entries = []
        for record in read_jsonl(path):
            skill = str(record.get("episode_skill") or record.get("skill") or "").strip()
            if not skill or record.get("ok") is False:
                continue
            won = record.get("won")
            entries.append(SkillEntry(skill=skill, task_text=str(record.get("task_text", "")),
                                      first_observation=str(record.get("first_observation", "")),
                                      won=None if won is None else bool(won),
                                      summary=str(record.get("episode_summary") or record.get("summary") or ""),
                                      source=str(record.get("task") or record.get("episode_id") or "")))
        if not entries:
            raise ValueError(f"skill library {path} has no usable record (each needs a non-empty episode_skill)")
        return cls(entries)

    def _weigh(self, counts: Counter) -> dict[str, float]:
        vector = {f: (1.0 + math.log(c)) * self.idf.get(f, 0.0) for f, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        return {f: v / norm for f, v in vector.items() if v}

    def retrieve(self, task_text: str, first_observation: str = "", won: bool | None = None) -> tuple[SkillEntry, float]:
        """The most similar entry and its cosine similarity; with `won` given, entries of the same outcome
        are searched first (all entries when none has that outcome). Ties go to the earliest entry."""
        query = self._weigh(_features(f"{task_text}\n{first_observation}"))
        pool = range(len(self.entries))
        if won is not None:
            same = [i for i in pool if self.entries[i].won == won]
            pool = same or pool
        best, best_score = -1, -1.0
        for index in pool:
            vector = self.vectors[index]
            score = sum(v * vector.get(f, 0.0) for f, v in query.items())
            if score > best_score + 1e-12:
                best, best_score = index, score
        return self.entries[best], best_score
