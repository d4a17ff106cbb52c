"""The language server, with the workspace rules' check of each entry held until a file appears
(tests only): a test can then ask the server something while that work is certainly running.

`HELD_RULES_ENTERED` is created when a check starts, `HELD_RULES_RELEASE` lets the checks go on.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main() -> int:
    entered = Path(os.environ["HELD_RULES_ENTERED"])
    release = Path(os.environ["HELD_RULES_RELEASE"])

    from my_agent_core.context.rules import WorkspaceRules

    real = WorkspaceRules._claims

    def held(self: WorkspaceRules, source: str) -> object:
        if self.index is not None:  # the checks against the workspace, not the text rules
            entered.touch()
            while not release.exists():
                time.sleep(0.01)
        return real(self, source)

    WorkspaceRules._claims = held  # type: ignore[method-assign]

    from my_agent_core.cli import main as cli_main

    return cli_main(["serve"])


if __name__ == "__main__":
    sys.exit(main())
