#!/usr/bin/env bash
# `npm run package`: builds dist/my-agent-core-<version>.vsix (Linux x64, CPython 3.10-3.13, works offline).
#  1. npm ci when node_modules is missing; tsc --strict + webview type check + esbuild bundles (production)
#  2. scripts/package-wheels.sh: bundled/server (server source) + bundled/wheels (offline wheelhouse)
#  3. vsce package --no-dependencies (the client is one esbuild bundle, vscode-languageclient included)
#  4. checks the archive holds what the extension needs at runtime
# Nothing is rebuilt when the .vsix is up to date: the digest of its inputs (the sources, the manifest, the
# translations and these scripts, never build outputs such as __pycache__, client/out or bundled/) matches
# the one stored beside it when it was built. So `scripts/test.sh` then `scripts/demo.sh` build it once.
# Usage: scripts/package-vsix.sh [--check]   (--check: exit 0 when up to date, 1 when a build is due)
# Env: SKIP_WHEELS=1 reuses an existing bundled/ (faster rebuilds of the client only); FORCE=1 always builds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VERSION=$(node -p "require('./package.json').version")
NAME=$(node -p "require('./package.json').name")
VSIX="dist/$NAME-$VERSION.vsix"
STAMP="dist/.$NAME-$VERSION.vsix.inputs"

# The inputs of the .vsix, by content: every file under these paths except caches and build outputs. Paths
# and bytes both count, so an edit, a new file and a deleted one are all seen, and a `touch` is not.
INPUTS=(package.json package-lock.json package.nls.json package.nls.zh-cn.json .vscodeignore tsconfig.json
        tsconfig.webview.json pyproject.toml README.md LICENSE LICENSE.md CHANGELOG.md l10n client/src
        client/media client/build.mjs server/my_agent_core scripts/package-vsix.sh scripts/package-wheels.sh)
inputs_digest() {
  local present=()
  for p in "${INPUTS[@]}"; do [ -e "$p" ] && present+=("$p"); done
  find "${present[@]}" \( -name __pycache__ -o -name '*.egg-info' -o -name .mypy_cache -o -name .ruff_cache \
       -o -name .pytest_cache \) -prune -o -type f ! -name '*.py[co]' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
}
up_to_date() {
  [ "${FORCE:-0}" != "1" ] && [ -f "$VSIX" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(inputs_digest)" ]
}

if [ "${1:-}" = "--check" ]; then
  if up_to_date; then echo "package-vsix: $VSIX is up to date"; exit 0; fi
  echo "package-vsix: $VSIX needs a build"; exit 1
fi

# One build at a time (tests and the demo may call `npm run package` concurrently): bundled/ and dist/ are shared.
mkdir -p .cache
exec 9>".cache/package-vsix.lock"
flock 9

# Checked under the lock: a build that ran meanwhile may have made it current.
if up_to_date; then
  echo "package-vsix: $ROOT/$VSIX is up to date (its inputs did not change since it was built; FORCE=1 rebuilds)"
  exit 0
fi
DIGEST=$(inputs_digest)  # what this build is made from (the stamp is written only once it succeeded)

[ -d node_modules ] || npm ci --no-audit --no-fund
npm run --silent compile
node client/build.mjs --production

if [ "${SKIP_WHEELS:-0}" = "1" ] && [ -d bundled/wheels ]; then
  echo "package-vsix: reusing bundled/ (SKIP_WHEELS=1)"
else
  bash scripts/package-wheels.sh
fi

mkdir -p dist
rm -f "$VSIX" "$STAMP"
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
echo "$DIGEST" > "$STAMP"
echo "package-vsix: wrote $ROOT/$VSIX ($(du -h "$VSIX" | cut -f1), $(tail -1 <<<"$listing" | awk '{print $2}') files)"
