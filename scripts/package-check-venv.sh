#!/usr/bin/env bash
# Replays the extension's first-run setup with each given interpreter, offline, from bundled/wheels:
# `python -m venv`, then `pip install --isolated --no-index --find-links bundled/wheels my-agent-core`
# (PIP_CONFIG_FILE=/dev/null, as client/src/common/python.ts does), then imports the server. Prints seconds.
# Usage: scripts/package-check-venv.sh [PYTHON ...]   (default: python3.10 .. python3.13 found on PATH or pyenv)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WHEELS="$ROOT/bundled/wheels"
[ -d "$WHEELS" ] || { echo "package-check-venv: run scripts/package-wheels.sh first" >&2; exit 1; }

pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
  for v in 3.10 3.11 3.12 3.13; do
    p=""
    if command -v pyenv >/dev/null 2>&1; then
      p=$(ls -d "$(pyenv root)/versions/$v".*/bin/python3 2>/dev/null | sort -V | tail -1 || true)
    fi
    for c in "/usr/bin/python$v" "/usr/local/bin/python$v"; do
      [ -z "$p" ] && [ -x "$c" ] && p=$c
    done
    if [ -n "$p" ] && "$p" -c 'pass' >/dev/null 2>&1; then pythons+=("$p"); fi
  done
fi

status=0
for py in "${pythons[@]}"; do
  tmp=$(mktemp -d)
  ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
  start=$(date +%s.%N)
  if PIP_CONFIG_FILE=/dev/null "$py" -m venv "$tmp/venv" >"$tmp/log" 2>&1 \
     && env -u PYTHONPATH PIP_CONFIG_FILE=/dev/null "$tmp/venv/bin/python" -m pip install --isolated --no-index \
          --find-links "$WHEELS" --disable-pip-version-check --no-input my-agent-core >>"$tmp/log" 2>&1; then
    end=$(date +%s.%N)
    if "$tmp/venv/bin/python" -c 'import my_agent_core, pygls, lsprotocol, openai, ahocorasick' >>"$tmp/log" 2>&1; then
      printf 'package-check-venv: Python %-8s venv + offline install %5.1f s  (imports ok)\n' "$ver" "$(echo "$end - $start" | bc)"
    else
      printf 'package-check-venv: Python %-8s installed in %5.1f s but imports FAILED\n' "$ver" "$(echo "$end - $start" | bc)"
      tail -5 "$tmp/log"; status=1
    fi
  else
    echo "package-check-venv: Python $ver FAILED"; tail -15 "$tmp/log"; status=1
  fi
  rm -rf "$tmp"
done
exit $status
