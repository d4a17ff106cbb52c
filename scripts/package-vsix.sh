#!/usr/bin/env bash
# `npm run package`: builds dist/my-agent-core-<version>.vsix (Linux x64, CPython 3.10-3.13, works offline).
#  1. npm ci when node_modules is missing; tsc --strict + webview type check + esbuild bundles (production)
#  2. scripts/package-wheels.sh: bundled/server (server source) + bundled/wheels (offline wheelhouse)
#  3. vsce package --no-dependencies (the client is one esbuild bundle, vscode-languageclient included)
#  4. checks the archive holds what the extension needs at runtime
# Env: SKIP_WHEELS=1 reuses an existing bundled/ (faster rebuilds of the client only).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VERSION=$(node -p "require('./package.json').version")
NAME=$(node -p "require('./package.json').name")
VSIX="dist/$NAME-$VERSION.vsix"

# One build at a time (tests and the demo may call `npm run package` concurrently): bundled/ and dist/ are shared.
mkdir -p .cache
exec 9>".cache/package-vsix.lock"
flock 9

[ -d node_modules ] || npm ci --no-audit --no-fund
npm run --silent compile
node client/build.mjs --production

if [ "${SKIP_WHEELS:-0}" = "1" ] && [ -d bundled/wheels ]; then
  echo "package-vsix: reusing bundled/ (SKIP_WHEELS=1)"
else
  bash scripts/package-wheels.sh
fi

mkdir -p dist
rm -f "$VSIX"
# vscode:prepublish (node client/build.mjs --production) runs again inside vsce; that is cheap.
npx vsce package --no-dependencies --skip-license --allow-missing-repository --out "$VSIX"

# The archive must hold the runtime pieces; fail loudly if not.
listing=$(unzip -l "$VSIX")
for f in extension/package.json extension/package.nls.zh-cn.json extension/l10n/bundle.l10n.zh-cn.json \
         extension/client/dist/extension.js extension/client/dist/extension.js.map extension/client/dist/chat.js \
         extension/client/media/chat.css extension/bundled/server/my_agent_core/__init__.py; do
  grep -q " $f\$" <<<"$listing" || { echo "package-vsix: $f missing from $VSIX" >&2; exit 1; }
done
grep -q "extension/bundled/wheels/my_agent_core-$VERSION-py3-none-any.whl" <<<"$listing" \
  || { echo "package-vsix: the my-agent-core wheel is missing from $VSIX" >&2; exit 1; }
for v in 310 311 312 313; do
  grep -q "pydantic_core-.*-cp$v-cp$v-manylinux" <<<"$listing" \
    || { echo "package-vsix: no pydantic_core wheel for cp$v in $VSIX" >&2; exit 1; }
done
if grep -Eq "extension/(node_modules|client/src|tests)/" <<<"$listing"; then
  echo "package-vsix: sources or node_modules leaked into $VSIX" >&2; exit 1
fi
echo "package-vsix: wrote $ROOT/$VSIX ($(du -h "$VSIX" | cut -f1), $(tail -1 <<<"$listing" | awk '{print $2}') files)"
