#!/bin/bash
# Installs what the end-to-end tests and the demo need: a real VS Code (code-server 4.100.3 = VS Code
# 1.100.3), playwright-core and Debian's chromium. Idempotent; a second run takes well under a second.
# Usage: scripts/setup-vscode.sh [DIR]
#   DIR defaults to $MY_AGENT_VSCODE_DIR, else ${XDG_CACHE_HOME:-~/.cache}/my-agent-core/vscode-e2e
#   (a cache shared by every clone, so fresh CI clones do not rebuild code-server's native modules).
# Afterwards: DIR/node_modules/.bin/code-server and DIR/node_modules/playwright-core; chromium at
# /usr/bin/chromium (override with $CHROMIUM). Adapted from the shared vscode-e2e-setup.sh.
set -euo pipefail
DIR=${1:-${MY_AGENT_VSCODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/my-agent-core/vscode-e2e}}
CS_VERSION=4.100.3 PW_VERSION=1.65.1
RG_PKG_VERSION=1.15.11 RG_ASSET=ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz
export DEBIAN_FRONTEND=noninteractive
log() { echo "setup-vscode: $*" >&2; }

# Fast path: everything already there (the check the tests make too).
ready() {
  [ -x "$DIR/node_modules/.bin/code-server" ] && [ -f "$DIR/node_modules/playwright-core/package.json" ] \
    && [ -f "$DIR/.complete-$CS_VERSION-$PW_VERSION" ] && command -v "${CHROMIUM:-chromium}" >/dev/null
}

if ! ready; then
  # 1. Debian packages: the browser, kerberos headers (a native module of code-server), ripgrep, a
  #    compiler for the native modules, and the node headers npm builds them against.
  need=()
  for p in chromium libkrb5-dev ripgrep g++ make python3 curl; do
    dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
    log "installing Debian packages: ${need[*]}"
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi

  # 2. @vscode/ripgrep's postinstall downloads from GitHub unless a cached archive is there: give it one.
  RGC="${TMPDIR:-/tmp}/vscode-ripgrep-cache-$RG_PKG_VERSION"
  if [ ! -s "$RGC/$RG_ASSET" ]; then
    mkdir -p "$RGC/stage" && cp "$(command -v rg)" "$RGC/stage/rg"
    tar czf "$RGC/$RG_ASSET" -C "$RGC/stage" rg && rm -rf "$RGC/stage"
  fi

  # 3. code-server and playwright-core; native modules build against Debian nodejs' headers (/usr) when
  #    they are there, else node-gyp fetches the headers of the running node.
  mkdir -p "$DIR"
  [ -f "$DIR/package.json" ] || echo '{"name":"my-agent-core-vscode-e2e","private":true}' > "$DIR/package.json"
  nodedir=()
  [ -f /usr/include/node/node_version.h ] && [ "$(node -p process.version)" = "v$(sed -n \
    's/#define NODE_\(MAJOR\|MINOR\|PATCH\)_VERSION \([0-9]*\)/\2/p' /usr/include/node/node_version.h \
    | paste -sd.)" ] && nodedir=(npm_config_nodedir=/usr)
  log "installing code-server@$CS_VERSION and playwright-core@$PW_VERSION into $DIR (a few minutes)"
  ( cd "$DIR" && env "${nodedir[@]}" npm_config_yes=true npm_config_unsafe_perm=true \
      npm_config_dangerously_allow_all_scripts=true \
      npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" "playwright-core@$PW_VERSION" )
  find "$DIR/node_modules/code-server" -name '*.node' -path '*pty*' | grep -q . \
    || { log "code-server's native modules were not built"; exit 1; }
  touch "$DIR/.complete-$CS_VERSION-$PW_VERSION"
fi
echo "code-server: $DIR/node_modules/.bin/code-server ($("$DIR/node_modules/.bin/code-server" --version 2>/dev/null | grep -m1 'with Code' || true))"
echo "playwright-core: $DIR/node_modules/playwright-core; chromium: $(command -v "${CHROMIUM:-chromium}")"
