"""A throwaway PostgreSQL cluster for tests and benchmarks: initdb in a temp dir, a unix socket only.

Runs the server as a non-root user (initdb refuses root): as root, through `runuser -u postgres`. No
TCP port is opened (`listen_addresses=''`), fsync is off (a test cluster), and the cluster is stopped
and removed at the end. `unavailable()` says why a cluster cannot run here, for a clear skip.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgCluster", "bin_dir", "throwaway_cluster", "unavailable"]

_SERVER_USER = "postgres"


def bin_dir() -> Path | None:
    """Where initdb and pg_ctl are (Debian's /usr/lib/postgresql/<version>/bin, newest first)."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.access(os.path.join(candidate, "initdb"), os.X_OK):
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _run_as() -> list[str]:
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", _SERVER_USER, "--"]


def unavailable() -> str | None:
    """Why no throwaway cluster can run here, or None."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    if bin_dir() is None:
        return "PostgreSQL server binaries not found (run scripts/setup-postgres.sh)"
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            return "running as root without runuser to start PostgreSQL as another user"
        try:
            pwd.getpwnam(_SERVER_USER)
        except KeyError:
            return f"running as root and there is no {_SERVER_USER!r} user to run PostgreSQL"
    return None


@dataclass(frozen=True)
class PgCluster:
    """A running cluster: `dsn` reaches its `postgres` database as the superuser `test`; `stop()`
    and `start()` take it down and bring it back (a server that goes away mid-session)."""

    root: Path
    socket_dir: Path
    user: str = "test"

    def stop(self) -> None:
        _pg_ctl(self.root, "-m", "fast", "-w", "stop")

    def start(self) -> None:
        _start(self.root, self.socket_dir)

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} dbname={dbname} user={self.user}"

    def create_database(self, name: str) -> str:
        """A fresh database; returns its DSN."""
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)


@contextmanager
def throwaway_cluster() -> Iterator[PgCluster]:
    """Start a cluster in a temp dir; stop and delete it afterwards."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    binaries = bin_dir()
    assert binaries is not None
    root = Path(tempfile.mkdtemp(prefix="pgtest-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    prefix = _run_as()
    if prefix:
        entry = pwd.getpwnam(_SERVER_USER)
        for path in (root, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    subprocess.run(
        [*prefix, str(binaries / "initdb"), "-D", str(data), "-U", "test", "--auth=trust",
         "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    _start(root, sockets)
    try:
        yield PgCluster(root=root, socket_dir=sockets)
    finally:
        _pg_ctl(root, "-m", "immediate", "-w", "stop", check=False)
        shutil.rmtree(root, ignore_errors=True)


def _start(root: Path, sockets: Path) -> None:
    options = f"-k {sockets} -c listen_addresses='' -c fsync=off -c max_connections=40"
    _pg_ctl(root, "-o", options, "-l", str(root / "server.log"), "-w", "-t", "60", "start")


def _pg_ctl(root: Path, *args: str, check: bool = True) -> None:
    binaries = bin_dir()
    assert binaries is not None
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    subprocess.run(
        [*_run_as(), str(binaries / "pg_ctl"), "-D", str(root / "data"), *args],
        check=check, capture_output=True, env=env,
    )  # fmt: skip
