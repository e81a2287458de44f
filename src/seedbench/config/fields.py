"""The generic field checker, documentation reader and flag builder of config dataclasses.

One checker serves every config dataclass (the run config, an agent's ``algo`` config, stage 1's
settings): each field against its annotation (``Literal`` enumerations, ``Annotated[..., Range(...)]``
value ranges, types; every float must be finite). Documentation is the string written under each field
(`field_docs`), which ``seedbench config`` prints (`describe`) and CLI flags use as their help
(`add_config_flags`). Knows nothing about envs, agents or the registry (`seedbench.config.resolve` does).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import yaml

from seedbench.config.errors import ConfigError
from seedbench.config.schema import Range, ZeroOrAtLeast
from seedbench.yamlio import YAMLFileError, parse_yaml


def _type_hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls, include_extras=True)


YAML_BOOL_WORDS = {False: ("off", "no", "false"), True: ("on", "yes", "true")}
"""The words YAML reads as booleans, for enumerations that spell one of them (``optim.packing: off``)."""


def check_value(value: Any, hint: Any, where: str) -> Any:
    """`value` checked against the annotation `hint` (Annotated ranges, Literal, Optional, bool, int,
    float, str, list, dict); returns it coerced (ints to float, numeric strings from ``--set``)."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *extras = get_args(hint)
        value = check_value(value, base, where)
        for extra in extras:
            if isinstance(extra, (Range, ZeroOrAtLeast)) and value is not None and not extra.contains(value):
                over = getattr(extra, "reason", "") and extra.high is not None and value > extra.high
                reason = f" ({extra.reason})" if over else ""  # the reason is the upper bound's
                raise ConfigError(f"{where}: {value!r} is out of range; must be {extra}{reason}")
        return value
    if origin is Union or type(hint) is type(int | None):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        options = [o for o in options if o is not type(None)]
        if len(options) == 1:
            return check_value(value, options[0], where)
        return value
    if origin is Literal:
        choices = get_args(hint)
        if isinstance(value, bool):  # YAML 1.1 reads off/on/no/yes as booleans: `packing: off` means "off"
            value = next((word for word in YAML_BOOL_WORDS[value] if word in choices), value)
        if value not in choices:
            raise ConfigError(f"{where}: unknown {value!r}; choose one of: {', '.join(map(str, choices))}")
        return value
    if isinstance(value, str) and hint in (bool, int, float):
        try:
            value = float(value) if hint is float else yaml.safe_load(value)
        except (ValueError, yaml.YAMLError):
            pass
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{where}: expected true/false, got {value!r}")
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        if not math.isfinite(value):  # NaN passes every range comparison; inf overflows what it scales
            raise ConfigError(f"{where}: {value!r} is not a finite number")
        return float(value)
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {value!r}")
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        (item,) = get_args(hint) or (Any,)
        return [check_value(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict and not isinstance(value, dict):
        raise ConfigError(f"{where}: expected a mapping, got {value!r}")
    return value


def check_dataclass(obj: Any, path: str = "") -> Any:
    """Check (and coerce in place) every field of a config dataclass, recursing into nested ones."""
    hints = _type_hints(type(obj))
    for f in fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            check_dataclass(value, f"{path}{f.name}.")
        else:
            setattr(obj, f.name, check_value(value, hints[f.name], f"{path}{f.name}"))
    return obj


def update_dataclass(obj: Any, values: dict[str, Any], path: str = "") -> Any:
    """Recursively apply a mapping onto a dataclass instance, rejecting unknown keys and checking each
    value against its field's annotation."""
    names = {f.name: f for f in fields(obj)}
    hints = _type_hints(type(obj))
    for key, value in values.items():
        where = f"{path}{key}"
        if key not in names:
            raise ConfigError(f"unknown config key {where!r}; valid keys: {', '.join(sorted(names))}")
        current = getattr(obj, key)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a mapping")
            update_dataclass(current, value, f"{where}.")
        elif isinstance(current, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a mapping")
            current.update(value)
        else:
            setattr(obj, key, check_value(value, hints[key], where))
    return obj


def parse_set_pairs(pairs: list[str]) -> dict[str, Any]:
    """``["optim.lr=1e-6", "env_kwargs.size=6"]`` (the ``--set`` flags of every command) as a nested
    mapping of overrides, each value read as YAML; a pair without ``=`` is a `ConfigError`."""
    values: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        key, raw = pair.split("=", 1)
        try:
            value = parse_yaml(raw, f"--set {key.strip()}")
        except YAMLFileError as err:
            raise ConfigError(str(err)) from None
        set_dotted(values, key.strip(), value)
    return values


def set_dotted(values: dict[str, Any], dotted: str, value: Any) -> None:
    """``set_dotted(d, "optim.lr", 1e-6)`` → ``d["optim"]["lr"] = 1e-6``."""
    *parents, last = dotted.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value


def get_dotted(obj: Any, dotted: str) -> Any:
    """``get_dotted(config, "optim.lr")``; mappings (``algo``, ``env_kwargs``) are looked into too."""
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part)
    return obj


# ----------------------------------------------------------------------------------------------------
# Documentation: the docstring under each field


def field_docs(cls: type) -> dict[str, str]:
    """Field name → the string literal written right under the field (attribute docstring), for `cls`
    and its dataclass bases; ``metadata["doc"]`` wins where given. Read from the source with `ast`, so the
    documentation lives next to the field it documents."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, after in zip(body, body[1:]):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
                docs[node.target.id] = inspect.cleandoc(after.value.value)
    for f in fields(cls):
        if "doc" in f.metadata:
            docs[f.name] = f.metadata["doc"]
    return docs


def type_text(hint: Any) -> str:
    """A short human form of an annotation: ``int >= 1``, ``one of: return, success``, ``float | None``."""
    origin = get_origin(hint)
    if origin is Annotated:
        base, *extras = get_args(hint)
        ranges = [str(e) for e in extras if isinstance(e, (Range, ZeroOrAtLeast))]
        return " ".join([type_text(base), *ranges])
    if origin is Literal:
        return "one of: " + ", ".join(map(str, get_args(hint)))
    if origin is Union or type(hint) is type(int | None):
        return " | ".join(type_text(a) for a in get_args(hint))
    if hint is type(None):
        return "None"
    if origin is not None:
        return str(hint).replace("typing.", "")
    return getattr(hint, "__name__", str(hint))


@dataclass
class FieldInfo:
    """One documented config field, as `seedbench config` prints it."""

    name: str
    type: str
    default: Any
    doc: str


def describe(obj: Any, prefix: str = "") -> list[FieldInfo]:
    """Every field of a config dataclass instance (nested ones flattened to dotted names), with its type,
    current value and documentation."""
    hints, docs, rows = _type_hints(type(obj)), field_docs(type(obj)), []
    for f in fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            rows.append(FieldInfo(f"{prefix}{f.name}", "section", None, docs.get(f.name, "")))
            rows.extend(describe(value, f"{prefix}{f.name}."))
        else:
            rows.append(FieldInfo(f"{prefix}{f.name}", type_text(hints[f.name]), value, docs.get(f.name, "")))
    return rows


def format_fields(rows: list[FieldInfo]) -> str:
    """``name: type = default`` lines, each followed by its indented documentation."""
    lines = []
    for row in rows:
        if row.type == "section":
            lines.append(f"\n[{row.name}]" + (f"  {row.doc}" if row.doc else ""))
            continue
        lines.append(f"{row.name}: {row.type} = {row.default!r}")
        lines.extend(f"    {line}" for line in (row.doc or "(undocumented)").splitlines())
    return "\n".join(lines).lstrip("\n")


# ----------------------------------------------------------------------------------------------------
# Command-line flags onto config fields


def add_config_flags(parser: Any, config: Any, flags: dict[str, str], required: tuple[str, ...] = ()) -> None:
    """Add one flag per entry of `flags` (``"max-steps": "max_steps"``, ``"lora-rank": "model.lora_rank"``)
    to an argparse `parser`. Help text is the field's documentation and default; values are parsed by
    `apply_config_flags` (so a flag left out keeps the dataclass default); bool fields become switches."""
    import argparse

    for flag, dotted in flags.items():
        *parents, name = dotted.split(".")
        owner = get_dotted(config, ".".join(parents)) if parents else config
        hint, doc = _type_hints(type(owner))[name], field_docs(type(owner)).get(name, "")
        default = getattr(owner, name)
        text = " ".join(doc.split()).replace("%", "%%") + f" [{dotted}: {type_text(hint)}; default {default!r}]"
        kwargs: dict[str, Any] = {"dest": dotted, "default": argparse.SUPPRESS, "help": text}
        if hint is bool:
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = name.upper()
        parser.add_argument(f"--{flag}", required=flag in required, **kwargs)


def apply_config_flags(config: Any, args: Any) -> Any:
    """Set the fields whose flags were given (see `add_config_flags`) and check the whole config."""
    values: dict[str, Any] = {}
    for dotted, value in vars(args).items():
        set_dotted(values, dotted, value)
    update_dataclass(config, values)
    return check_dataclass(config)
