"""Env and agent registries.

Envs live in Gymnasium's registry under the ``seedbench/`` namespace (so ``gymnasium.make`` works) and
also get a short alias for the CLI (``sokoban``). Built-ins come from `seedbench.envs.CATALOGUE`;
third-party packages add envs through the ``seedbench.envs`` entry-point group, loaded lazily the first
time the registry is used. An entry point may name an `EnvEntry`, a list of them, or a zero-argument
callable returning either.

Agents are registered by name in `AGENTS` (filled by `seedbench.agents`), with the same lazy loading
through the ``seedbench.agents`` entry-point group.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any


class UnknownNameError(ValueError):
    """An env or agent name that is not registered; the message lists the valid choices."""


@dataclass(frozen=True)
class EnvEntry:
    """One catalogue line: CLI alias, Gymnasium id, string entry point, default kwargs."""

    alias: str
    env_id: str
    entry_point: str
    description: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    requires: str | None = None  # optional extra needed at make() time, shown by `seedbench envs`


_ENVS: dict[str, EnvEntry] = {}
_loaded = False


def register_env(entry: EnvEntry) -> None:
    """Add an env to both the seedbench alias table and Gymnasium's registry (idempotent)."""
    import gymnasium as gym

    _ENVS[entry.alias] = entry
    if entry.env_id not in gym.registry:
        gym.register(id=entry.env_id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs))


def _iter_plugin_entries(group: str):
    for ep in entry_points(group=group):
        obj = ep.load()
        if callable(obj) and not isinstance(obj, (EnvEntry, list, tuple)):
            obj = obj()
        if obj is None:
            continue
        yield from (obj if isinstance(obj, (list, tuple)) else [obj])


def ensure_envs_loaded() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from seedbench.envs import CATALOGUE

    for entry in CATALOGUE:
        register_env(entry)
    for entry in _iter_plugin_entries("seedbench.envs"):
        if not isinstance(entry, EnvEntry):
            raise TypeError(f"seedbench.envs entry point gave {entry!r}; expected an EnvEntry")
        register_env(entry)


def env_entries() -> dict[str, EnvEntry]:
    ensure_envs_loaded()
    return dict(_ENVS)


def resolve_env(name: str) -> EnvEntry:
    """Find an env by alias (``sokoban``) or Gymnasium id (``seedbench/Sokoban-v0``)."""
    entries = env_entries()
    if name in entries:
        return entries[name]
    for entry in entries.values():
        if entry.env_id == name:
            return entry
    choices = ", ".join(sorted(entries))
    raise UnknownNameError(f"unknown env {name!r}; choose one of: {choices}")


def make_env(name: str, **kwargs: Any):
    """Instantiate an env by alias or id. Returns the *unwrapped* TextEnv (no Gymnasium wrappers:
    the env enforces its own step cap and the trainer needs its attributes directly)."""
    import gymnasium as gym

    entry = resolve_env(name)
    try:
        env = gym.make(entry.env_id, disable_env_checker=True, **kwargs)
    except ImportError as err:
        hint = f" Install it with: pip install 'seedbench[{entry.requires}]'" if entry.requires else ""
        raise ImportError(f"env {entry.alias!r} needs a missing package ({err}).{hint}") from err
    return env.unwrapped


# ----------------------------------------------------------------------------------------------------
# Agents


@dataclass(frozen=True)
class AgentEntry:
    name: str
    factory: str  # "module:attr" of the agent class
    description: str
    overrides: dict[str, Any] = field(default_factory=dict)  # config values this variant sets


_AGENTS: dict[str, AgentEntry] = {}
_agents_loaded = False


def register_agent(entry: AgentEntry) -> None:
    _AGENTS[entry.name] = entry


def agent_entries() -> dict[str, AgentEntry]:
    global _agents_loaded
    if not _agents_loaded:
        _agents_loaded = True
        from seedbench.agents import CATALOGUE

        for entry in CATALOGUE:
            register_agent(entry)
        for entry in _iter_plugin_entries("seedbench.agents"):
            register_agent(entry)
    return dict(_AGENTS)


def resolve_agent(name: str) -> AgentEntry:
    entries = agent_entries()
    if name not in entries:
        raise UnknownNameError(f"unknown agent {name!r}; choose one of: {', '.join(sorted(entries))}")
    return entries[name]


def load_object(path: str):
    """Import ``"package.module:attr"``."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
