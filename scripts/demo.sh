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

# 2. The extension: npm ci when node_modules is missing or older than the lock file; package when the
#    .vsix is missing or older than its sources.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  log "npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi
vsix=$(ls -t dist/*.vsix 2>/dev/null | head -1 || true)
if [ -z "$vsix" ] || [ -n "$(find package.json package.nls.json client/src client/media server/my_agent_core \
      -newer "$vsix" -type f 2>/dev/null | head -1)" ]; then
  log "npm run package"
  npm run package
fi

# 3. code-server, playwright-core and chromium (cached outside the repo, shared by every clone).
bash scripts/setup-vscode.sh >/dev/null

# 4. Serve (or check) it.
exec .venv/bin/python tests/e2e/serve_demo.py "$@"
