"""The install contract of docs/install.md: a torch range (a GPU user's CUDA torch stays), and no
torchvision next to a CPU torch (PyPI's torchvision is a CUDA build; beside the CPU torch it fails to
import, and transformers' vision classes fail with it)."""

import importlib.metadata
import importlib.util
import re
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _torch_requirement() -> str:
    deps = re.search(r"^dependencies = \[(.*?)^\]", PYPROJECT.read_text(), re.DOTALL | re.MULTILINE).group(1)
    (requirement,) = re.findall(r'"(torch[^"]*)"', deps)
    return requirement


def test_torch_is_a_range_that_admits_the_cpu_build_and_cuda_builds():
    requirement = _torch_requirement()
    assert "==" not in requirement, f"pyproject pins {requirement}; a pin makes pip replace a user's CUDA torch"
    from packaging.requirements import Requirement

    spec = Requirement(requirement).specifier
    assert spec.contains("2.13.0") and spec.contains("2.13.0+cpu") and spec.contains("2.6.0+cu124")
    assert importlib.metadata.version("torch").split("+")[0] in spec  # the installed torch satisfies it


def test_a_cpu_torch_environment_has_no_torchvision():
    import torch

    if torch.version.cuda is not None:
        return  # a CUDA environment may hold a matching torchvision
    assert importlib.util.find_spec("torchvision") is None, (
        "torchvision is installed beside the CPU torch; `pip uninstall -y torchvision` (see docs/install.md)")
