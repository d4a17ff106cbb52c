#!/usr/bin/env bash
# Python side: .venv with my-agent-core (editable) and its test tools. Idempotent; PyPI only.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
echo "setup: $(.venv/bin/python --version), my-agent at .venv/bin/my-agent"
