"""Team memory through git: the git merge driver of MEMORY.md (the entry-wise merge itself is
`memory/merge.py`, which the store's parser also uses on a file git left conflicted) and the
`git-setup` that registers it.

Nothing is imported here: the merge driver runs as a process per merged file, so each command imports
only the modules it needs.
"""
