#!/usr/bin/env bash
# Sets up everything on a fresh machine and runs ALL tests: Python unit and language-server tests, the
# client's Node unit tests, the end-to-end tests in a real VS Code (code-server + Chromium), the
# PostgreSQL archive against a real server and the MCP server against the MCP Inspector.
# Extra arguments go to pytest. Pytest runs last, so its summary line is the last line printed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== client: npm ci, compile, lint, package"
npm ci --no-audit --no-fund --loglevel=error
npm run --silent lint
npm run --silent package
echo "== real VS Code: code-server + chromium"
scripts/setup-vscode.sh
echo "== PostgreSQL (a throwaway cluster per test session) and the MCP Inspector (an independent MCP client)"
scripts/setup-postgres.sh
scripts/setup-mcp-inspector.sh
echo "== pytest"
exec .venv/bin/python -m pytest "$@"
