"""YAML files read as plain data, with one error that names the file.

Run configs, recipes, experiment specs and ``--set`` values come from people and from shared run
directories, so any of them may be damaged or hostile. PyYAML raises different errors for what goes wrong:
`yaml.YAMLError` for bad syntax, `RecursionError` for nesting thousands of levels deep (its composer
recurses once per level), `UnicodeDecodeError` for bytes that are not UTF-8. Every reader of the project
goes through `read_yaml` or `parse_yaml`, which turn each of them into a `YAMLFileError` whose one-line
message names the file, so a caller catches one type and a command prints one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YAMLFileError(ValueError):
    """A YAML file (or value) cannot be read as data; the message names it and what is wrong."""


def parse_yaml(text: str, where: str) -> Any:
    """`text` parsed with ``yaml.safe_load``; `where` names its source (a path, ``--set key``) in the error."""
    try:
        return yaml.safe_load(text)
    except RecursionError:
        raise YAMLFileError(f"{where}: nested too deeply to read; a config is a mapping of plain values") from None
    except (yaml.YAMLError, ValueError) as err:  # ValueError: an integer too long to convert
        raise YAMLFileError(f"{where}: not valid YAML ({' '.join(str(err).split())})") from None


def read_yaml(path: str | Path) -> Any:
    """The data of the YAML file at `path`; a `YAMLFileError` naming it when it cannot be read or parsed."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise YAMLFileError(f"{path}: not valid YAML (not UTF-8 text)") from None
    except OSError as err:
        raise YAMLFileError(f"{path}: cannot be read ({err.strerror or err})") from None
    return parse_yaml(text, str(path))
