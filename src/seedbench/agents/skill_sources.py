"""Where the privileged skills of the distillation family come from: one `load_skill_source` for every
method that uses a library (SDAR, OP(S)D, GRPO+OP(S)D, Skill-SD, RLSD, RetireOPD, Skill-GRPO).

Two library formats:

- a **skill directory** in the SDAR reference's layout (itself SkillRL's hierarchical library, arXiv
  2602.08234): ``skill_mapping.json`` with ``skill_files`` (skill name → Markdown file),
  ``task_to_skill`` (task type → skill name) and optional ``task_keywords`` (task type → keywords), next
  to the Markdown files; a task receives the general skills plus the skills of its task type
  (`SkillDirectory`);
- a **JSONL library** of analysed episodes (`seedbench.agents.seed.skill_library.SkillLibrary`, SEED's
  stage-1 annotations), retrieved by TF-IDF similarity of task text and first observation.

Task-type retrieval in a skill directory (``retrieval``):

- ``task_type`` (default; the reference after its ALFWorld fix): the task id (ALFWorld's game name,
  which starts with the full ALFRED task type; the reference matches the game-file path) is searched for
  each ``task_to_skill`` key in file order, the first contained key wins; without a match, every task
  type with *any* of its keywords in the prompt text contributes its skills (general skills once);
- ``general_only``: the reference before that fix, where ALFWorld teachers received the general skills
  only (its rows carried no game file and the ``text`` data source matched no task type). Kept to
  reproduce runs made before the fix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from seedbench.agents.seed.skill_library import SkillLibrary

Retrieval = Literal["task_type", "general_only"]
RETRIEVALS = ("task_type", "general_only")
GENERAL = "general_skills"


class SkillSource(Protocol):
    """What the distillation agents need from a library: one skill text per trajectory, and a record of
    where it came from (logged next to the update)."""

    description: str

    def skill_for(self, task_id: str, task_text: str, prompt_text: str, first_observation: str = "",
                  won: bool | None = None) -> tuple[str, dict[str, Any]]: ...


@dataclass
class SkillDirectory:
    root: Path
    skill_files: dict[str, str]
    task_to_skill: dict[str, str]
    task_keywords: dict[str, list[str]]
    contents: dict[str, str]
    retrieval: Retrieval = "task_type"
    skill_all: bool = False

    @property
    def description(self) -> str:
        mode = "all skills" if self.skill_all else f"retrieval={self.retrieval}"
        return f"skill directory {self.root} ({mode})"

    @classmethod
    def load(cls, root: str | Path, retrieval: Retrieval = "task_type", skill_all: bool = False) -> "SkillDirectory":
        root = Path(root)
        if retrieval not in RETRIEVALS:
            raise ValueError(f"unknown skill retrieval {retrieval!r}; choose one of {', '.join(RETRIEVALS)}")
        mapping_path = root / "skill_mapping.json"
        try:
            mapping = json.loads(mapping_path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"{mapping_path}: cannot read the skill mapping ({err})") from err
        files = mapping.get("skill_files")
        if not isinstance(files, dict) or not files:
            raise ValueError(f"{mapping_path}: needs a non-empty 'skill_files' object (skill name -> Markdown file)")
        contents = {}
        for name, filename in files.items():
            path = root / str(filename)
            if not path.is_file():
                raise ValueError(f"{mapping_path}: skill {name!r} names {filename}, which is not a file in {root}")
            contents[name] = path.read_text().strip()
        return cls(root, dict(files), dict(mapping.get("task_to_skill") or {}),
                   {k: [str(w).lower() for w in v] for k, v in (mapping.get("task_keywords") or {}).items()},
                   contents, retrieval, skill_all)

    def _text(self, task_types: list[str]) -> str:
        parts = [self.contents.get(GENERAL, "")]
        for task_type in task_types:
            name = self.task_to_skill.get(task_type)
            if name and name in self.contents and self.contents[name] not in parts:
                parts.append(self.contents[name])
        return "\n\n".join(part for part in parts if part)

    def matched_task_types(self, task_id: str, prompt_text: str) -> tuple[list[str], str]:
        """The task types whose skills a task gets, and how they were found (``task_id``, ``keywords``,
        ``none``, ``all``)."""
        if self.skill_all:
            return [t for t in self.task_to_skill], "all"
        if self.retrieval == "general_only":
            return [], "none"
        for task_type in self.task_to_skill:
            if task_id and task_type in task_id:
                return [task_type], "task_id"
        text = prompt_text.lower()
        matched = [t for t, words in self.task_keywords.items() if words and any(w in text for w in words)]
        return matched, "keywords" if matched else "none"

    def skill_for(self, task_id: str, task_text: str, prompt_text: str, first_observation: str = "",
                  won: bool | None = None) -> tuple[str, dict[str, Any]]:
        if self.skill_all:
            names = [GENERAL] + [n for n in self.contents if n != GENERAL]
            text = "\n\n".join(self.contents[n] for n in names if self.contents.get(n))
            return text, {"skill_types": sorted(self.task_to_skill), "matched_by": "all"}
        task_types, how = self.matched_task_types(task_id, prompt_text or task_text)
        return self._text(task_types), {"skill_types": task_types, "matched_by": how}


@dataclass
class JsonlSkills:
    """A SEED-style JSONL library behind the `SkillSource` interface."""

    library: Any
    path: str
    match_outcome: bool = False

    @property
    def description(self) -> str:
        return f"JSONL skill library {self.path} (TF-IDF retrieval by task text + first observation)"

    def skill_for(self, task_id: str, task_text: str, prompt_text: str, first_observation: str = "",
                  won: bool | None = None) -> tuple[str, dict[str, Any]]:
        entry, score = self.library.retrieve(task_text, first_observation, won if self.match_outcome else None)
        return entry.skill, {"library_source": entry.source, "library_similarity": round(score, 4)}


def load_skill_source(path: str | Path, retrieval: Retrieval = "task_type", skill_all: bool = False,
                      match_outcome: bool = False) -> SkillSource:
    """A skill directory (has ``skill_mapping.json``) or a JSONL library (a file, or a directory with
    ``annotations.jsonl``). Raises `FileNotFoundError` / `ValueError` with the path in the message."""
    path = Path(path)
    if path.is_dir() and (path / "skill_mapping.json").is_file():
        return SkillDirectory.load(path, retrieval, skill_all)
    return JsonlSkills(SkillLibrary.load(path), str(path), match_outcome)
