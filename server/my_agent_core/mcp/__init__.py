"""The memory as a Model Context Protocol server, for the agents people already use (Copilot agent
mode, Claude Code, Cline, Codex, Cursor): the same store, the same `memory` tool object, the same
budgets, scanner and journal as the built-in agent.

`server.build_server(store, ...)` makes the server; `command` is `my-agent mcp`. Nothing is imported
here, so the command line does not load the MCP SDK unless this command runs.
"""
