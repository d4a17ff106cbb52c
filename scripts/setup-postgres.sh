#!/usr/bin/env bash
# PostgreSQL for the `postgres` memory provider's tests and benchmark: Debian's server binaries (the
# tests start a throwaway cluster on a unix socket; no service is enabled) and psycopg in .venv.
# Idempotent: installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup-postgres: PostgreSQL is missing; run as root (or: sudo apt-get install postgresql)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  # The package enables and starts a system cluster; the tests use their own, so stop it again.
  if command -v pg_lsclusters >/dev/null 2>&1; then
    pg_lsclusters -h 2>/dev/null | while read -r version name _; do
      pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
    done
  fi
fi
if [ -x .venv/bin/python ] && ! .venv/bin/python -c "import psycopg" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check 'psycopg[binary]>=3.1'
fi
echo "setup-postgres: $(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
