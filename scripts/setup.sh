#!/usr/bin/env bash
# Python side: .venv with my-agent-core (editable) and its test tools. Idempotent; PyPI only.
# pip shows what it downloads and installs as it goes, with progress bars (the first run fills .venv with
# about 230 MB and takes a few minutes; a later run only checks and takes seconds).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
log() { echo "setup: $*" >&2; }
if [ ! -x .venv/bin/python ]; then
  log "creating .venv with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv .venv
fi
log "[1/2] upgrading pip in .venv"
.venv/bin/python -m pip install --disable-pip-version-check --progress-bar on --upgrade pip
log "[2/2] installing my-agent-core (editable) with its dependencies and test tools into .venv"
.venv/bin/python -m pip install --disable-pip-version-check --progress-bar on -e '.[test]'
echo "setup: $(.venv/bin/python --version), my-agent at .venv/bin/my-agent"
