#!/bin/bash
# One command opens the product: sets everything up on a fresh machine, installs the extension into a
# local VS Code (code-server) and serves it on 127.0.0.1 with the demo workspace (or FOLDER).
# Usage: scripts/demo.sh [--check] [--port N] [FOLDER]
#   --check  start, verify in chromium that the page loads, the extension activates and the demo's
#            over-budget MEMORY.md shows diagnostics, save test-output/e2e/demo-check.png, exit 0/1.
# Every step is skipped when already done, so a second run starts in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { echo "demo: $*" >&2; }

# 1. Python: .venv with my_agent_core installed editable (scripts/setup.sh is the project's set-up).
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import my_agent_core.lsp' 2>/dev/null; then
  log "setting up Python (.venv)"
  bash scripts/setup.sh
fi

# 2. The extension: npm ci when node_modules is missing or older than the lock file; the .vsix is built
#    only when its inputs changed since the last build (scripts/package-vsix.sh compares their digest, so
#    the __pycache__ the tests leave behind, or a .vsix that scripts/test.sh just built, cost nothing).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
if ! bash scripts/package-vsix.sh --check >/dev/null; then
  log "building the .vsix (scripts/package-vsix.sh)"
fi
bash scripts/package-vsix.sh

# 3. code-server, playwright-core and chromium (cached outside the repo, shared by every clone).
bash scripts/setup-vscode.sh >/dev/null

# 4. Serve (or check) it.
exec .venv/bin/python tests/e2e/serve_demo.py "$@"
