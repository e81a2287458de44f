"""ALFWorld's TextWorld engine as seedbench runs it: the stock wrappers plus small fixes.

1. **Engine caches** (speed, same output). TextWorld re-parses the same grammar snippets and logic queries
   with TatSu at every step (each admissible command's text is derived from the grammar), which is most of
   a step's time; and every load and every reset translate the game's PDDL with fast-downward twice
   (plain, and optimised for TextWorld's planner). We memoise the pure functions involved:
   `textworld.logic.Rule.parse_conjunctive_query`, `textworld.envs.pddl.textgen._parse_and_convert`
   (returning a deep copy, callers mutate the symbols) and `fast_downward.pddl2sas` (an LRU of recent
   games, keyed by the PDDL text); the planner's optimised translation is replaced by the plain one,
   since only the PDDL planner expert (``policy_commands``) uses it and seedbench never asks for that.
   Steps get about 5x faster, a new game loads with one translation instead of four, and a game already
   seen in the process resets in a fraction of that; observations and admissible commands are identical
   (tested). ``SEEDBENCH_ALFWORLD_ENGINE_CACHE=0`` turns all of this off.
2. **Expert fix for 0.4.x.** alfworld 0.4.x renamed the engine's ``put O in/on R`` command to
   ``move O to R``, but its handcoded expert only updates its inventory when the last command contains
   ``put``: after its first placement it believes it still holds that object, so every pick-two game (and
   any game where it puts something back) fails. We hand the expert the old spelling of the last
   command; the engine still receives ``move``.
"""

from __future__ import annotations

import copy
import hashlib
import os
import sys
from collections import OrderedDict

ALFWORLD_VERSION = "0.4.2"
_PARSE_CACHE_LIMIT = 50_000
_TRANSLATION_CACHE_SIZE = 32  # games; a translated kitchen game holds a few MB
_patched = False


def missing_alfworld_error(err: Exception | None = None) -> ImportError:
    return ImportError(
        f"ALFWorld needs the alfworld package ({err}). Install it with: pip install 'seedbench[alfworld]' "
        f"(pins alfworld=={ALFWORLD_VERSION}; it compiles jericho and fast-downward, so cmake, g++ and make "
        "must be installed)"
    )


def enable_engine_caches() -> bool:
    """Memoise TextWorld's parsing and fast-downward's translation in this process (idempotent).
    Returns whether the caches are on."""
    global _patched
    if _patched:
        return True
    if os.environ.get("SEEDBENCH_ALFWORLD_ENGINE_CACHE", "1") == "0":
        return False
    import fast_downward
    import textworld.envs.pddl.textgen as textgen
    from textworld.logic import Rule

    if not (hasattr(Rule, "parse_conjunctive_query") and hasattr(textgen, "_parse_and_convert")
            and hasattr(fast_downward, "pddl2sas")):
        return False  # a TextWorld release with other internals: run it stock
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

    translate = fast_downward.pddl2sas
    translations: OrderedDict[tuple, tuple] = OrderedDict()

    def cached_translate(domain, problem, *args, **kwargs):
        if kwargs.get("optimize"):
            # The optimised translation only feeds TextWorld's planner (`replan`: policy commands, missing
            # walkthroughs), which seedbench never requests; load the plain translation in its place.
            kwargs = {**kwargs, "optimize": False}
        digest = hashlib.sha256(f"{domain}\0{problem}".encode()).hexdigest()
        key = (digest, args, tuple(sorted(kwargs.items())))
        if key in translations:
            translations.move_to_end(key)
            return translations[key]
        argv = sys.argv[:]  # fast-downward overwrites sys.argv (it feeds its own option parser)
        try:
            result = translations[key] = translate(domain, problem, *args, **kwargs)
        finally:
            sys.argv = argv
        while len(translations) > _TRANSLATION_CACHE_SIZE:
            translations.popitem(last=False)
        return result

    Rule.parse_conjunctive_query = classmethod(cached_parse_query)
    textgen._parse_and_convert = cached_parse_symbols
    fast_downward.pddl2sas = cached_translate
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


def make_engine(expert: bool = False, caches: bool = True):
    """TextWorld's PDDL env with ALFWorld's wrappers: entity names like "cabinet 1", the game file in the
    state, and (``expert=True``) the handcoded expert's next command in ``state["extra.expert_plan"]``."""
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from textworld.envs import PddlEnv
    except ImportError as err:
        raise missing_alfworld_error(err) from err
    if caches:
        enable_engine_caches()

    infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
    env = AlfredInfos(AlfredDemangler(PddlEnv(infos), shuffle=False))
    if expert:
        env = make_expert_wrapper()(env, expert_type="handcoded")
    return env
