"""The per-user state folder of a test run (the key that signs chat sessions) is a temporary folder,
never the real `~/.local/state/my-agent-core`: set before any test runs, so the servers and command
lines the tests start inherit it, and removed at the end. A test that needs "another machine" points
XDG_STATE_HOME elsewhere with monkeypatch."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_made: list[str] = []


def pytest_configure(config: pytest.Config) -> None:
    folder = tempfile.mkdtemp(prefix="my-agent-state-")
    _made.append(folder)
    os.environ["XDG_STATE_HOME"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _made:
        shutil.rmtree(folder, ignore_errors=True)
