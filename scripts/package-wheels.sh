#!/usr/bin/env bash
# Stages bundled/ for the .vsix: the server source (bundled/server/my_agent_core) and an offline wheelhouse
# (bundled/wheels) holding the runtime dependencies from pyproject.toml for CPython 3.10-3.13 on Linux x86_64
# plus a wheel of my-agent-core itself. Downloads are cached in .cache/wheelhouse (gitignored).
# Env: PYTHON (a Python with pip, default .venv/bin/python or python3), PY_VERSIONS (default "3.10 3.11 3.12 3.13").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-$([ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}
PY_VERSIONS=${PY_VERSIONS:-"3.10 3.11 3.12 3.13"}
CACHE="$ROOT/.cache/wheelhouse"
OUT="$ROOT/bundled"

[ -d server/my_agent_core ] || { echo "package-wheels: server/my_agent_core is missing" >&2; exit 1; }

# Runtime dependencies, read from [project.dependencies] (tomllib needs 3.11; fall back to tomli/regex).
mapfile -t DEPS < <("$PYTHON" - <<'PY'
import re
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None
text = open("pyproject.toml", encoding="utf-8").read()
if tomllib:
    deps = tomllib.loads(text)["project"]["dependencies"]
else:
    block = re.search(r"^dependencies\s*=\s*\[(.*?)\]", text, re.S | re.M).group(1)
    deps = re.findall(r'"([^"]+)"', block)
print("\n".join(deps))
PY
)
echo "package-wheels: runtime dependencies: ${DEPS[*]}"

rm -rf "$OUT"
mkdir -p "$OUT/server" "$OUT/wheels" "$CACHE"

# 1. Server source, without caches.
cp -R server/my_agent_core "$OUT/server/"
find "$OUT/server" \( -name __pycache__ -o -name '*.pyc' -o -name '*.egg-info' \) -prune -exec rm -rf {} +

# 2. Binary wheels of the dependencies for every supported Python (manylinux x86_64 only: no sdists).
# pip evaluates environment markers (e.g. `exceptiongroup; python_version < "3.11"`) with the interpreter that
# runs it, not with --python-version, so each version is downloaded by an interpreter of that version when
# one exists (PATH, /usr/bin, pyenv); otherwise $PYTHON does it and marker-only dependencies may be missing.
find_python() {
  local v=$1 p="" c
  if command -v pyenv >/dev/null 2>&1; then
    p=$(ls -d "$(pyenv root)/versions/$v".*/bin/python3 2>/dev/null | sort -V | tail -1 || true)
  fi
  for c in "/usr/bin/python$v" "/usr/local/bin/python$v"; do
    [ -z "$p" ] && [ -x "$c" ] && p=$c
  done
  if [ -n "$p" ] && "$p" -m pip --version >/dev/null 2>&1; then echo "$p"; else echo "$PYTHON"; fi
}
declare -A PY_FOR
for v in $PY_VERSIONS; do
  PY_FOR[$v]=$(find_python "$v")
  echo "package-wheels: downloading wheels for CPython $v with ${PY_FOR[$v]}"
  "${PY_FOR[$v]}" -m pip download --disable-pip-version-check --quiet \
    --only-binary=:all: --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --python-version "$v" --implementation cp --dest "$CACHE" "${DEPS[@]}" \
    2> >(grep -v 'is ignored: it is neither a file nor a directory' >&2)
done

# 3. A wheel of the project itself, built from a staged copy so the repo gets no build/ or egg-info.
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cp pyproject.toml "$STAGE/"
mkdir -p "$STAGE/server"
cp -R server/my_agent_core "$STAGE/server/"
find "$STAGE/server" -name __pycache__ -prune -exec rm -rf {} +
if [ -f README.md ]; then cp README.md "$STAGE/"; else echo "# my-agent-core" > "$STAGE/README.md"; fi
[ -f LICENSE ] && cp LICENSE "$STAGE/"
"$PYTHON" -m pip wheel --disable-pip-version-check --quiet --no-deps --wheel-dir "$STAGE/dist" "$STAGE"

# Only what the supported interpreters need: wheels of this project's dependency closure.
cp "$STAGE"/dist/my_agent_core-*.whl "$OUT/wheels/"
for v in $PY_VERSIONS; do
  PIP_CONFIG_FILE=/dev/null "${PY_FOR[$v]}" -m pip download --isolated --disable-pip-version-check --quiet \
    --no-index --find-links "$CACHE" \
    --only-binary=:all: --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
    --python-version "$v" --implementation cp --dest "$OUT/wheels" "${DEPS[@]}"
done
echo "package-wheels: $(ls "$OUT/wheels" | wc -l) wheels, $(du -sh "$OUT/wheels" | cut -f1) in bundled/wheels"
