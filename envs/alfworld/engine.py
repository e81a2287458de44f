"""ALFWorld's TextWorld engine as seedbench runs it: the stock wrappers plus three small fixes.

1. **Parse cache** (speed, same output). TextWorld re-parses the same grammar snippets and logic queries
   with TatSu at every step (each admissible command's text is derived from the grammar), which is most of
   a step's time. We memoise the two pure parse functions (`textworld.logic.Rule.parse_conjunctive_query`
   and `textworld.envs.pddl.textgen._parse_and_convert`, the latter returning a deep copy because callers
   mutate the symbols). Steps get about 5x faster; observations and admissible commands are identical
   (tested). Set ``SEEDBENCH_ALFWORLD_PARSE_CACHE=0`` to turn it off.
2. **One state build per reset.** `PddlEnv.load` builds the initial PDDL state (fast-downward's
   translation, the slowest part of a reset) and `PddlEnv.reset` builds it again; the first reset after a
   load reuses the untouched one.
3. **Expert fix for 0.4.x.** alfworld 0.4.x renamed the engine's ``put O in/on R`` command to
   ``move O to R``, but its handcoded expert only updates its inventory when the last command contains
   ``put``: after its first placement it believes it still holds that object, so every pick-two game (and
   any game where it puts something back) fails. We hand the expert the old spelling of the last
   command; the engine still receives ``move``.
"""

from __future__ import annotations

import copy
import os

ALFWORLD_VERSION = "0.4.2"
_PARSE_CACHE_LIMIT = 50_000
_patched = False


def missing_alfworld_error(err: Exception | None = None) -> ImportError:
    return ImportError(
        f"ALFWorld needs the alfworld package ({err}). Install it with: pip install 'seedbench[alfworld]' "
        f"(pins alfworld=={ALFWORLD_VERSION}; it compiles jericho and fast-downward, so cmake, g++ and make "
        "must be installed)"
    )


def enable_parse_cache() -> bool:
    """Memoise TextWorld's grammar/query parsing in this process (idempotent). Returns whether it is on."""
    global _patched
    if _patched:
        return True
    if os.environ.get("SEEDBENCH_ALFWORLD_PARSE_CACHE", "1") == "0":
        return False
    import textworld.envs.pddl.textgen as textgen
    from textworld.logic import Rule

    parse_query = Rule.parse_conjunctive_query.__func__
    queries: dict[str, object] = {}

    def cached_parse_query(cls, expr):
        rule = queries.get(expr)
        if rule is None:
            if len(queries) > _PARSE_CACHE_LIMIT:
                queries.clear()
            rule = queries[expr] = parse_query(cls, expr)
        return rule

    parse_symbols = textgen._parse_and_convert
    symbols: dict[tuple, object] = {}

    def cached_parse_symbols(*args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        try:
            parsed = symbols.get(key)
        except TypeError:  # unhashable argument: do not cache
            return parse_symbols(*args, **kwargs)
        if parsed is None:
            if len(symbols) > _PARSE_CACHE_LIMIT:
                symbols.clear()
            parsed = symbols[key] = parse_symbols(*args, **kwargs)
        return copy.deepcopy(parsed)

    Rule.parse_conjunctive_query = classmethod(cached_parse_query)
    textgen._parse_and_convert = cached_parse_symbols
    _patched = True
    return True


def make_expert_wrapper():
    """ALFWorld's `AlfredExpert` wrapper with the 0.4.x ``move``/``put`` fix (see the module docstring)."""
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredExpert

    class MoveAwareAlfredExpert(AlfredExpert):
        def step(self, command):
            self.state, reward, done = textworld.core.Wrapper.step(self, command)
            command = str(command)
            self.prev_command = "put " + command[len("move "):] if command.startswith("move ") else command
            self._gather_infos()
            return self.state, reward, done

    return MoveAwareAlfredExpert


def make_engine(expert: bool = False, parse_cache: bool = True):
    """TextWorld's PDDL env with ALFWorld's wrappers: entity names like "cabinet 1", the game file in the
    state, and (``expert=True``) the handcoded expert's next command in ``state["extra.expert_plan"]``."""
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from textworld.envs import PddlEnv
        from textworld.envs.pddl import logic as pddl_logic
    except ImportError as err:
        raise missing_alfworld_error(err) from err
    if parse_cache:
        enable_parse_cache()

    class FreshPddlEnv(PddlEnv):
        _fresh_state = None

        def load(self, *args, **kwargs):
            super().load(*args, **kwargs)
            self._fresh_state = self._pddl_state

        def reset(self):
            fresh, self._fresh_state = self._fresh_state, None
            if fresh is None:
                return super().reset()
            build = pddl_logic.PddlState
            pddl_logic.PddlState = lambda *args, **kwargs: fresh  # one engine per process: no races
            try:
                return super().reset()
            finally:
                pddl_logic.PddlState = build

    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
    env = AlfredInfos(AlfredDemangler(FreshPddlEnv(infos), shuffle=False))
    if expert:
        env = make_expert_wrapper()(env, expert_type="handcoded")
    return env
