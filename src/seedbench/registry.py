"""Env and agent registries: one `Registry` type, two instances (`ENVS`, `AGENTS`).

A registry is a table of catalogue lines (`EnvEntry`, `AgentEntry`) filled from two sources: the
built-in catalogue (`seedbench.envs.CATALOGUE`, `seedbench.agents.CATALOGUE`) and third-party packages
through an entry-point group (``seedbench.envs``, ``seedbench.agents``). An entry point may name an
entry, a list of them, or a zero-argument callable returning either. Plugins load lazily, the first
time a registry is looked up, so `import seedbench` imports no plugin code.

A plugin never takes the registry down with it: an entry point that fails to load (missing module,
attribute typo, exception on import), gives something that is not an entry, or claims a name that is
already taken (a plugin may not shadow a built-in, nor an earlier plugin) is skipped with one logged
line naming its distribution and entry point; every other env and agent keeps working.

Envs also live in Gymnasium's registry under the ``seedbench/`` namespace, so ``gymnasium.make`` works:
`import seedbench` registers the built-in catalogue (string entry points, so nothing heavy is imported);
plugin envs join when the registry first loads them (any seedbench command, `env_entries`, `make_env`).
`make_env` hands out envs behind the contract guard of `seedbench.envs.contract`.
"""

from __future__ import annotations

import difflib
import importlib
import logging
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Callable, Generic, TypeVar

log = logging.getLogger(__name__)

__all__ = ["AgentEntry", "EntryPointError", "EnvEntry", "RegistryConflictError", "UnknownNameError", "agent_entries",
           "ensure_envs_loaded", "env_entries", "make_env", "register_agent", "register_env", "resolve_agent",
           "resolve_env"]


class UnknownNameError(ValueError):
    """An env or agent name that is not registered; the message lists the valid choices."""


class RegistryConflictError(ValueError):
    """An entry claims a name (alias, id) that another entry already holds; the message names both."""


class EntryPointError(ImportError):
    """A ``"module:attr"`` string that does not import; the message names the string and the reason."""


class Entry:
    """What every catalogue line offers the registry: the name it is listed under and every name it is
    looked up by (an env is found by alias or by Gymnasium id)."""

    @property
    def key(self) -> str:
        raise NotImplementedError

    def lookup_names(self) -> tuple[str, ...]:
        return (self.key,)

    def describe(self) -> str:
        """How the entry is named in a conflict message."""
        return self.key


@dataclass(frozen=True)
class EnvEntry(Entry):
    """One env catalogue line: CLI alias, Gymnasium id, string entry point, default kwargs."""

    alias: str
    env_id: str
    entry_point: str
    description: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    requires: str | None = None  # optional extra needed at make() time, shown by `seedbench envs`
    data_generator: str | None = None  # "module:function(argv) -> exit code" run by `seedbench data <alias>`

    @property
    def key(self) -> str:
        return self.alias

    def lookup_names(self) -> tuple[str, ...]:
        return (self.alias, self.env_id)

    def describe(self) -> str:
        return f"{self.alias} ({self.env_id}, {self.entry_point})"


@dataclass(frozen=True)
class AgentEntry(Entry):
    """One agent catalogue line: name, the class that implements it, description, config overrides."""

    name: str
    factory: str  # "module:attr" of the agent class
    description: str
    overrides: dict[str, Any] = field(default_factory=dict)  # config values this variant sets
    aliases: tuple[str, ...] = ()  # other names that resolve to this entry (e.g. a paper's name for it)

    @property
    def key(self) -> str:
        return self.name

    def lookup_names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def describe(self) -> str:
        return f"{self.name} ({self.factory})"


E = TypeVar("E", bound=Entry)


class Registry(Generic[E]):
    """Entries of one kind, from a built-in catalogue and an entry-point group, looked up by name.

    `kind` names the entries in messages ("env", "agent"); `catalogue` is the ``"module:attr"`` of the
    built-in list (imported on first use); `on_add` runs for every accepted entry (envs: register with
    Gymnasium).
    """

    def __init__(self, kind: str, entry_type: type[E], catalogue: str, group: str,
                 on_add: Callable[[E], None] | None = None):
        self.kind, self.entry_type, self.catalogue, self.group = kind, entry_type, catalogue, group
        self.on_add = on_add
        self._entries: dict[str, E] = {}
        self._by_name: dict[str, E] = {}  # every lookup name -> its entry
        self._origin: dict[str, str] = {}  # entry key -> "built-in" or the plugin that added it
        self._builtins_loaded = False
        self._plugins_loaded = False

    # -- filling -------------------------------------------------------------------------------------

    def add(self, entry: E, origin: str = "built-in") -> None:
        """Register `entry`; re-adding an equal entry is a no-op. Raises `RegistryConflictError` when one
        of its names belongs to a different entry: nothing, not even a built-in, is silently shadowed."""
        self._check_free(entry)
        if entry.key in self._entries:
            return
        self._entries[entry.key] = entry
        self._origin[entry.key] = origin
        for name in entry.lookup_names():
            self._by_name[name] = entry
        if self.on_add is not None:
            self.on_add(entry)

    def _check_free(self, entry: E) -> None:
        if not isinstance(entry, self.entry_type):
            raise TypeError(f"expected a {self.entry_type.__name__}, got {entry!r}")
        for name in entry.lookup_names():
            holder = self._by_name.get(name)
            if holder is not None and holder != entry:
                raise RegistryConflictError(
                    f"{self.kind} name {name!r} of {entry.describe()} is already taken by "
                    f"{holder.describe()} [{self._origin[holder.key]}]")

    def reload(self) -> None:
        """Forget every entry: the next lookup reads the catalogue and the entry points again (a plugin
        installed into a running session, tests that install one)."""
        self._entries.clear()
        self._by_name.clear()
        self._origin.clear()
        self._builtins_loaded = self._plugins_loaded = False

    def load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for entry in load_object(self.catalogue):
            self.add(entry)

    def load_plugins(self) -> None:
        """Add every entry the ``group`` entry points give; a broken one is skipped with one log line."""
        self.load_builtins()
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        for ep in entry_points(group=self.group):
            origin = _describe_entry_point(ep)
            try:
                entries = self._entries_of(ep)
                for entry in entries:  # all or nothing: a plugin is not half registered
                    self._check_free(entry)
                for entry in entries:
                    self.add(entry, origin=origin)
            except Exception as err:  # noqa: BLE001 - any failure of third-party code skips just that plugin
                log.warning("seedbench: skipped %s plugin %s: %s: %s", self.kind, origin, type(err).__name__,
                            " ".join(str(err).split()))

    def _entries_of(self, ep: EntryPoint) -> list[E]:
        obj = ep.load()
        if callable(obj) and not isinstance(obj, (Entry, list, tuple)):
            obj = obj()
        entries = [] if obj is None else list(obj) if isinstance(obj, (list, tuple)) else [obj]
        for entry in entries:
            if not isinstance(entry, self.entry_type):
                raise TypeError(f"it gave {entry!r}; expected a seedbench.registry.{self.entry_type.__name__}")
        return entries

    # -- lookup --------------------------------------------------------------------------------------

    def entries(self) -> dict[str, E]:
        self.load_plugins()
        return dict(self._entries)

    def resolve(self, name: str) -> E:
        self.load_plugins()
        entry = self._by_name.get(name)
        if entry is None:
            close = difflib.get_close_matches(name, sorted(self._by_name), n=1)  # aliases and ids
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint}; choose one of: {', '.join(sorted(self._entries))}")
        return entry

    def origin(self, name: str) -> str:
        """Where `name` came from: ``built-in``, ``register_env()`` or the entry point (and its distribution)."""
        return self._origin[self.resolve(name).key]


def _describe_entry_point(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    where = f"distribution {dist.name} {dist.version}" if dist is not None else "unknown distribution"
    return f"entry point '{ep.name} = {ep.value}' in group {ep.group} ({where})"


def load_object(path: str):
    """Import ``"package.module:attr"``; a bad string raises `EntryPointError` naming it."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise EntryPointError(f"{path!r} is not a 'module:attribute' string")
    try:
        obj = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name and (module == err.name or module.startswith(err.name + ".")):
            raise EntryPointError(f"{path!r}: no module named {err.name!r}") from err
        raise  # the module exists but needs a package that is missing: the caller adds the install hint
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise EntryPointError(f"{path!r}: module {module!r} has no attribute {attr!r}") from None
    return obj


# ----------------------------------------------------------------------------------------------------
# Envs


def _register_with_gymnasium(entry: EnvEntry) -> None:
    import gymnasium as gym

    spec = gym.registry.get(entry.env_id)
    if spec is None or spec.entry_point != entry.entry_point or spec.kwargs != dict(entry.kwargs):
        gym.registry.pop(entry.env_id, None)  # a re-registered plugin replaces its stale spec, silently
        gym.register(id=entry.env_id, entry_point=entry.entry_point, kwargs=dict(entry.kwargs))


ENVS: Registry[EnvEntry] = Registry("env", EnvEntry, "seedbench.envs:CATALOGUE", "seedbench.envs",
                                    on_add=_register_with_gymnasium)


def register_env(entry: EnvEntry) -> None:
    """Add an env to the seedbench alias table and Gymnasium's registry (idempotent; refuses shadowing)."""
    ENVS.load_builtins()
    ENVS.add(entry, origin="register_env()")


def register_builtin_envs() -> None:
    """Register the built-in catalogue with Gymnasium (done by `import seedbench`; imports no env code)."""
    ENVS.load_builtins()


def ensure_envs_loaded() -> None:
    """Register every env, built-in and plugin, with seedbench and with Gymnasium, so that
    ``gymnasium.make("seedbench/<plugin env>")`` works; idempotent (a later call does nothing)."""
    ENVS.load_plugins()


def env_entries() -> dict[str, EnvEntry]:
    """Every env, built-in and plugin, by alias (loads plugins and registers them with Gymnasium)."""
    return ENVS.entries()


def resolve_env(name: str) -> EnvEntry:
    """Find an env by alias (``sokoban``) or Gymnasium id (``seedbench/Sokoban-v0``)."""
    return ENVS.resolve(name)


def make_env(name: str, **kwargs: Any):
    """Instantiate an env by alias or id, behind the contract guard (`seedbench.envs.contract`).

    Returns the env object itself, no Gymnasium wrappers (the env enforces its own step cap and the
    trainer reads its attributes directly); the guard only turns a broken env rule (a raising
    `parse_action`, a non-string observation, missing `info` keys) into a one-line `EnvContractError`."""
    import gymnasium as gym

    from seedbench.envs.contract import guard

    entry = resolve_env(name)
    try:
        load_object(entry.entry_point)  # a typo in the entry point is named here, not deep in gymnasium
        env = gym.make(entry.env_id, disable_env_checker=True, **kwargs)
    except EntryPointError as err:
        raise EntryPointError(f"env {entry.alias!r} cannot be made: {err}") from err
    except ImportError as err:
        if _names_seedbench(err):  # not a missing package: the env asks seedbench for a name it does not have
            raise EntryPointError(f"env {entry.alias!r} cannot be made: it imports a seedbench name that does not "
                                  f"exist ({' '.join(str(err).split())}); plugins import the API listed in "
                                  "docs/adding_an_env.md") from err
        hint = f" Install it with: pip install 'seedbench[{entry.requires}]'" if entry.requires else ""
        raise ImportError(f"env {entry.alias!r} needs a missing package ({err}).{hint}") from err
    return guard(env.unwrapped, entry.alias)


def _names_seedbench(err: ImportError) -> bool:
    """Whether the import that failed is of a seedbench module (``No module named 'seedbench.x'``) or of a
    name in one (``cannot import name 'Y' from 'seedbench.x'``): Python sets `name` to that module."""
    return (err.name or "").partition(".")[0] == "seedbench"


# ----------------------------------------------------------------------------------------------------
# Agents


AGENTS: Registry[AgentEntry] = Registry("agent", AgentEntry, "seedbench.agents:CATALOGUE", "seedbench.agents")


def register_agent(entry: AgentEntry) -> None:
    AGENTS.load_builtins()
    AGENTS.add(entry, origin="register_agent()")


def agent_entries() -> dict[str, AgentEntry]:
    return AGENTS.entries()


def resolve_agent(name: str) -> AgentEntry:
    return AGENTS.resolve(name)


def canonical_agent(name: str) -> str:
    """The catalogue name of agent `name` (an alias resolves to its entry's name); a name no installed
    entry knows (a plugin agent of someone else's board) is returned unchanged."""
    try:
        return resolve_agent(name).name
    except UnknownNameError:
        return name
