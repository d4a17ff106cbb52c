"""Package exports that load their submodule on first use.

A console command is a process per call (the git merge driver runs once per merge), so importing a
package must not import everything it re-exports: the names resolve through PEP 562's module
`__getattr__` instead, and type checkers still see them through `if TYPE_CHECKING:` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `homes` maps an exported name to its submodule, or to a
    module named relative to the package (`"..layout"`: a module of the package above)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if home.startswith(".") else f".{home}"
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # later lookups are plain attribute reads
        return value

    return __getattr__
