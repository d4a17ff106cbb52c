"""Team memory through git: an entry-wise three-way merge of MEMORY.md, its git merge driver and the
`git-setup` that registers it.

Nothing is imported here: the merge driver runs as a process per merged file, so each command imports
only the modules it needs.
"""
