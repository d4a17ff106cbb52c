"""`python -m my_agent_core` is the `my-agent` command line.

`python -m my_agent_core serve` (what the editor starts) goes straight to the language server: the
full command line (its parser imports the chat, MCP and team commands) is not built, which is start-up
time the editor's first answer would wait for.
"""

import sys


def _serve() -> int:
    from my_agent_core.lsp.server import (
        main as serve,
    )  # here: only the server loads (start-up time)

    try:
        serve()
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        sys.exit(_serve())
    from my_agent_core.cli import main

    sys.exit(main())
