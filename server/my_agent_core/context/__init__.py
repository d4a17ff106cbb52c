"""What the language server knows about the workspace beyond memory: context files frozen into the
prompt, the workspace index behind the lint rules that keep memory true, and import."""
