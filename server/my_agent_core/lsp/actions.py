"""Code actions: a quick fix per fixable finding, a fix-all source action, and "promote this
entry to AGENTS.md".

Fixes come ready-made with the findings of the buffer's current version (ruff-style), so a quick
fix never re-lints. Fixes carry only an `edit`, never a `command`: lsprotocol parses a CodeAction
that has a nested command as a plain Command on the client side. Two actions carry a command and
no edit: the promotion (its edit is proposed by the server when it runs, so the entry leaves
memory only once the editor applied it, promote.py), and the button of `driver-not-set-up`, which
runs the client's `myAgent.gitSetup` for the folder (team_rules.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from my_agent_core.memory.lint import DRIVER_NOT_SET_UP, Finding, TextEdit, fix_all, select_edits
from my_agent_core.memory.safety import scan

from .convert import minimal_edit
from .memory_buffer import SOURCE, MemoryBuffer
from .promote import PROMOTE_COMMAND, PROMOTE_KIND, team_file_name
from .promote import register as register_promote
from .team_rules import GIT_SETUP_COMMAND
from .uris import path_to_uri

if TYPE_CHECKING:
    from .hooks import ServerHooks
    from .server import MyAgentServer

__all__ = ["FIX_ALL_KIND", "code_actions", "fix_all_action", "promote_action", "register"]

FIX_ALL_KIND = "source.fixAll.myAgent"
QUICKFIX = types.CodeActionKind.QuickFix.value


def _wanted(only: list[str] | None, kind: str) -> bool:
    """Whether `kind` is asked for by the context's `only` (a hierarchical prefix match)."""
    if not only:
        return True
    return any(o == "" or kind == o or kind.startswith(f"{o}.") for o in only)


def workspace_edit(
    ls: ServerHooks, buf: MemoryBuffer, edits: list[TextEdit]
) -> types.WorkspaceEdit:
    """A WorkspaceEdit for the buffer's current version (versioned when the client can)."""
    conv = buf.converter
    lsp_edits = [
        types.TextEdit(range=conv.range(e.start, e.end), new_text=e.new_text) for e in edits
    ]
    ws = ls.client_capabilities.workspace
    versioned = bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes)
    if versioned:
        doc_id = types.OptionalVersionedTextDocumentIdentifier(uri=buf.uri, version=buf.version)
        versioned_edits: list[types.TextEdit | types.AnnotatedTextEdit | types.SnippetTextEdit]
        versioned_edits = list(lsp_edits)
        return types.WorkspaceEdit(
            document_changes=[types.TextDocumentEdit(text_document=doc_id, edits=versioned_edits)]
        )
    return types.WorkspaceEdit(changes={buf.uri: lsp_edits})


def _matching(
    buf: MemoryBuffer, params: types.CodeActionParams
) -> list[tuple[Finding, types.Diagnostic]]:
    """The buffer's findings the request is about, each with the diagnostic to attach."""
    findings, diagnostics = buf.findings, buf.diagnostics
    found: dict[int, types.Diagnostic] = {}
    for diag in params.context.diagnostics:
        if diag.source != SOURCE:
            continue
        data = diag.data if isinstance(diag.data, dict) else {}
        n = data.get("id")
        if data.get("gen") == buf.generation and isinstance(n, int) and 0 <= n < len(findings):
            found[n] = diag
            continue
        for i, mine in enumerate(diagnostics):  # an older version's diagnostic: match it by place
            if mine.code == diag.code and mine.range == diag.range:
                found[i] = diag
    if not found and not params.context.diagnostics:
        conv = buf.converter
        start, end = conv.offset(params.range.start), conv.offset(params.range.end)
        for i, finding in enumerate(findings):
            if finding.start <= end and start <= finding.end:
                found[i] = diagnostics[i]
    return [(findings[i], found[i]) for i in sorted(found)]


def code_actions(
    ls: ServerHooks, buf: MemoryBuffer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """Quick fixes for the findings in the request, then per-code and file-wide fix-alls."""
    only = params.context.only
    wanted = [str(getattr(o, "value", o)) for o in only] if only else None
    actions: list[types.CodeAction] = []
    if _wanted(wanted, QUICKFIX):
        codes: set[str] = set()
        for finding, diag in _matching(buf, params):
            for k, fix in enumerate(finding.fixes):
                actions.append(
                    types.CodeAction(
                        title=fix.title,
                        kind=QUICKFIX,
                        diagnostics=[diag],
                        is_preferred=k == 0,
                        edit=workspace_edit(ls, buf, list(fix.edits)),
                    )
                )
            if finding.code == DRIVER_NOT_SET_UP:
                actions.append(git_setup_action(buf, diag))
            if finding.fixes:
                codes.add(finding.code)
        for code in sorted(codes):
            action = _fix_all_of_code(ls, buf, code)
            if action is not None:
                actions.append(action)
    if _wanted(wanted, FIX_ALL_KIND):
        action = fix_all_action(ls, buf)
        if action is not None:
            actions.append(action)
    if _wanted(wanted, PROMOTE_KIND):
        promote = promote_action(buf, params.range)
        if promote is not None:
            actions.append(promote)
    return actions


def git_setup_action(buf: MemoryBuffer, diag: types.Diagnostic) -> types.CodeAction:
    """The button of `driver-not-set-up`: the client's `myAgent.gitSetup` on this folder (the
    repository's config changes only when the user runs it)."""
    title = "Set up the memory merge driver in this clone (my-agent git-setup)"
    return types.CodeAction(
        title=title,
        kind=QUICKFIX,
        diagnostics=[diag],
        is_preferred=True,
        command=types.Command(
            title=title, command=GIT_SETUP_COMMAND, arguments=[{"folder": path_to_uri(buf.folder)}]
        ),
    )


def promote_action(buf: MemoryBuffer, rng: types.Range) -> types.CodeAction | None:
    """ "Move this entry to AGENTS.md (for the whole team)" on the entry the range starts in; none
    for an entry the scanner blocks (it never goes into a file every agent reads)."""
    doc = buf.doc
    entry = doc.entry_at(buf.converter.offset(rng.start))
    if entry is None or not entry.text or scan(entry.text):
        return None
    name = team_file_name(buf.folder)
    return types.CodeAction(
        title=f"Move this entry to {name} (a rule for the whole team)",
        kind=PROMOTE_KIND,
        command=types.Command(
            title=f"Move to {name}",
            command=PROMOTE_COMMAND,
            arguments=[{"uri": buf.uri, "entry": entry.text}],
        ),
    )


def _fix_all_of_code(ls: ServerHooks, buf: MemoryBuffer, code: str) -> types.CodeAction | None:
    """ "Fix all <code> problems" when more than one finding of that code is fixable."""
    pairs = [
        (f, d)
        for f, d in zip(buf.findings, buf.diagnostics, strict=True)
        if f.code == code and any(fix.fix_all for fix in f.fixes)
    ]
    if len(pairs) < 2:
        return None
    edits = select_edits(fix for f, _ in pairs for fix in f.fixes if fix.fix_all)
    return types.CodeAction(
        title=f"Fix all {code} problems",
        kind=QUICKFIX,
        diagnostics=[d for _, d in pairs],
        edit=workspace_edit(ls, buf, edits),
    )


def fix_all_action(ls: ServerHooks, buf: MemoryBuffer) -> types.CodeAction | None:
    """`source.fixAll.myAgent`: every auto-fixable problem at once (for codeActionsOnSave)."""
    if not any(fix.fix_all for f in buf.findings for fix in f.fixes):
        return None
    fixed = fix_all(buf.text, limit=buf.limit, near_share=buf.near_share)
    edit = minimal_edit(buf.text, fixed)
    if edit is None:
        return None
    start, end, new_text = edit
    return types.CodeAction(
        title="Fix all my-agent problems",
        kind=FIX_ALL_KIND,
        edit=workspace_edit(ls, buf, [TextEdit(start, end, new_text)]),
    )


def register(ls: MyAgentServer) -> None:
    """textDocument/codeAction with quick fixes, `source.fixAll.myAgent` and the promotion (whose
    command is registered here too)."""

    register_promote(ls)

    @ls.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND, PROMOTE_KIND],
            resolve_provider=False,
        ),
    )
    def on_code_action(
        ls: MyAgentServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        buf = ls.buffers.memory(params.text_document.uri)
        if buf is None:
            return None
        return code_actions(ls, buf, params) or None
