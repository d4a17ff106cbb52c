"""`python -m my_agent_core` is the `my-agent` command line."""

import sys

from my_agent_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
