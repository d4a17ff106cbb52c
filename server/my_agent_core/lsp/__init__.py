"""The my-agent language server (`my-agent serve`): see `server.build_server` and docs/lsp-core.md."""
