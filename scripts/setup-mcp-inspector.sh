#!/bin/bash
# Installs the MCP Inspector (npm @modelcontextprotocol/inspector), the independent client that
# tests/test_mcp_server.py drives in its command-line mode (`mcp-inspector --cli ...`).
# Idempotent; a second run takes well under a second.
# Usage: scripts/setup-mcp-inspector.sh [DIR]
#   DIR defaults to $MY_AGENT_MCP_INSPECTOR_DIR, else ${XDG_CACHE_HOME:-~/.cache}/my-agent-core/mcp-inspector
#   (a cache shared by every clone). Afterwards: DIR/node_modules/.bin/mcp-inspector
# The inspector declares Node >= 22; its command-line mode was checked to work on Node 20 too.
set -euo pipefail
DIR=${1:-${MY_AGENT_MCP_INSPECTOR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/my-agent-core/mcp-inspector}}
VERSION=2.12.0
BIN="$DIR/node_modules/.bin/mcp-inspector"
log() { echo "setup-mcp-inspector: $*" >&2; }

ready() { [ -x "$BIN" ] && [ -f "$DIR/.complete-$VERSION" ]; }

if ! ready; then
  command -v npm >/dev/null || { log "npm is not installed (Debian: apt-get install nodejs npm)"; exit 1; }
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name":"my-agent-core-mcp-inspector","private":true}' > "$DIR/package.json"
  log "installing @modelcontextprotocol/inspector@$VERSION into $DIR"
  ( cd "$DIR" && npm install --no-audit --no-fund --loglevel=error --engine-strict=false \
      "@modelcontextprotocol/inspector@$VERSION" )
  "$BIN" --version >/dev/null || { log "the inspector does not start"; exit 1; }
  rm -f "$DIR"/.complete-*
  touch "$DIR/.complete-$VERSION"
fi
echo "mcp-inspector: $BIN ($("$BIN" --version 2>/dev/null | head -n1))"
