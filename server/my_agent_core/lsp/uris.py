"""Paths and URIs as the server compares them (no symlink resolution: what the editor sends)."""

from __future__ import annotations

import os
from pathlib import Path

from pygls.uris import from_fs_path, to_fs_path

__all__ = ["norm_path", "path_to_uri", "uri_to_path"]


def norm_path(path: Path | str) -> Path:
    """Absolute, normalised path (no symlink resolution: compare what the editor sends)."""
    return Path(os.path.normcase(os.path.abspath(path)))


def uri_to_path(uri: str) -> Path | None:
    """A `file:` URI (or a plain absolute path) as a normalised path; None for other schemes."""
    if "\x00" in uri:
        return None
    if uri.startswith("file:"):
        try:
            fs = to_fs_path(uri)
        except Exception:
            return None
        return norm_path(fs) if fs else None
    if "://" in uri or not os.path.isabs(uri):
        return None
    return norm_path(uri)


def path_to_uri(path: Path) -> str:
    return from_fs_path(str(path)) or path.as_uri()
