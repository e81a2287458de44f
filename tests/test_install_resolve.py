"""The GPU install line of docs/install.md resolves to the versions the page names: pip's resolver, dry run
(metadata only, nothing downloaded beyond it), against PyPI alone and as on a fresh machine (this machine's
pip configuration, its local wheels and whatever is installed are ignored). Needs the registry: skipped,
with that reason, only where PyPI cannot be reached."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INDEX = "https://pypi.org/simple"
pytestmark = pytest.mark.slow


def _registry_reachable() -> bool:
    try:
        with urllib.request.urlopen(f"{INDEX}/vllm/", timeout=15) as response:
            return response.status == 200
    except OSError:
        return False


def _documented() -> tuple[str, dict[str, str]]:
    """The GPU install line and the versions docs/install.md says it resolves to."""
    text = (ROOT / "docs" / "install.md").read_text()
    line = re.search(r'^(pip install -e "\.\[vllm\]" torch==[\d.]+)', text, re.M)
    assert line, "docs/install.md names no GPU install line of the form pip install -e \".[vllm]\" torch==X"
    resolved = re.search(r"resolves to vLLM ([\d.]+)\.x with torch ([\d.]+)", text)
    assert resolved, "docs/install.md does not say what the GPU install line resolves to"
    return line.group(1), {"vllm": resolved.group(1), "torch": resolved.group(2)}


def test_the_documented_gpu_install_line_resolves_to_the_documented_versions(tmp_path):
    line, expected = _documented()
    if not _registry_reachable():
        pytest.skip(f"the package registry ({INDEX}) is unreachable from this machine")
    report = tmp_path / "report.json"
    requirements = line.split("pip install ", 1)[1].replace('"', "").split()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no local index, wheel folder or constraints: PyPI as a user sees it
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed",
                           "--disable-pip-version-check", "--index-url", INDEX, "--report", str(report),
                           *requirements], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    installs = json.loads(report.read_text())["install"]
    versions = {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in installs}
    assert versions["vllm"].startswith(expected["vllm"] + "."), versions["vllm"]  # the extra's range: one minor
    assert versions["torch"] == expected["torch"]
