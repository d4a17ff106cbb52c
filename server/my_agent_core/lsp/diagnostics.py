"""Lint open memory files as they are typed and hand the findings to the editor (push or pull).

Each open memory file has a `MemoryBuffer`: our own mirror of the unsaved text (incremental
changes applied with LSP's line rules and the negotiated position encoding), its parse and its
findings, kept per version so hover, code actions and the other views never re-parse or re-lint.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types

from my_agent_core.memory.document import MemoryDocument, parse, reparse
from my_agent_core.memory.lint import DUPLICATE_ENTRY, EMPTY_ENTRY, Finding, LintCache, lint

from .convert import PositionConverter, encoding_of, line_index

if TYPE_CHECKING:
    from .server import MyAgentServer

__all__ = [
    "SOURCE",
    "Buffers",
    "MemoryBuffer",
    "buffers",
    "register",
    "to_diagnostic",
]

logger = logging.getLogger(__name__)

SOURCE = "my-agent"
DEFAULT_LIMITS = {"memory": 2200, "user": 1375}
_UNNECESSARY = {DUPLICATE_ENTRY, EMPTY_ENTRY}


@dataclass
class MemoryBuffer:
    """One open memory file: unsaved text, parse, findings and their LSP form for one version."""

    uri: str
    folder: Any
    target: str
    version: int | None
    text: str
    limit: int
    near_share: float
    encoding: str
    generation: int = 0
    _doc: MemoryDocument | None = field(default=None, repr=False)
    _findings: list[Finding] | None = field(default=None, repr=False)
    _diagnostics: list[types.Diagnostic] | None = field(default=None, repr=False)
    _converter: PositionConverter | None = field(default=None, repr=False)
    cache: LintCache = field(default_factory=LintCache, repr=False)

    @property
    def doc(self) -> MemoryDocument:
        if self._doc is None:
            self._doc = parse(self.text)
        return self._doc

    @property
    def converter(self) -> PositionConverter:
        if self._converter is None:
            self._converter = PositionConverter(self.doc, self.encoding)
        return self._converter

    @property
    def findings(self) -> list[Finding]:
        if self._findings is None:
            self._findings = lint(
                self.doc, limit=self.limit, near_share=self.near_share, cache=self.cache
            )
        return self._findings

    @property
    def diagnostics(self) -> list[types.Diagnostic]:
        if self._diagnostics is None:
            self._diagnostics = [
                to_diagnostic(self, n, finding) for n, finding in enumerate(self.findings)
            ]
        return self._diagnostics

    @property
    def result_id(self) -> str:
        """Changes whenever the text or the settings do (for pull-diagnostic `resultId`s)."""
        return f"{self.generation}"

    def set_text(self, text: str, version: int | None) -> None:
        self.text = text
        self.version = version
        self._invalidate()

    def set_settings(self, limit: int, near_share: float) -> bool:
        """Update the budget settings; True when they changed (findings are then recomputed)."""
        if (limit, near_share) == (self.limit, self.near_share):
            return False
        self.limit, self.near_share = limit, near_share
        self._findings = self._diagnostics = None
        self.generation += 1
        return True

    def apply_change(self, change: Any) -> None:
        """Apply one `didChange` content change (incremental with a range, or the full text)."""
        rng = getattr(change, "range", None)
        if rng is None:
            self.text = change.text
        else:
            # the current parse if there is one, else just the line breaks (cheaper than a parse)
            conv = self._converter or PositionConverter(
                self._doc or line_index(self.text), self.encoding
            )
            start = conv.offset(rng.start)
            end = conv.offset(rng.end)
            if end < start:
                start, end = end, start
            old_doc = self._doc
            self.text = self.text[:start] + change.text + self.text[end:]
            if old_doc is not None and len(self.text) >= REPARSE_FROM:
                self._invalidate()
                try:
                    self._doc = reparse(old_doc, start, end, change.text, self.text)
                except Exception:  # never lose an edit over the shortcut: parse it all instead
                    logger.exception("re-parse around an edit failed; parsing the whole file")
                return
        self._invalidate()

    def _invalidate(self) -> None:
        self._doc = self._findings = self._diagnostics = self._converter = None
        self.generation += 1


REPARSE_FROM = 0  # characters; a window re-parse beat a full parse even at 2 KB (0.2 vs 0.35 ms)


class Buffers:
    """The open memory files of one server, by URI."""

    def __init__(self, ls: Any) -> None:
        self.ls = ls
        self.by_uri: dict[str, MemoryBuffer] = {}
        self._generation = 0

    def get(self, uri: str) -> MemoryBuffer | None:
        return self.by_uri.get(uri)

    def open(self, uri: str, text: str, version: int | None) -> MemoryBuffer | None:
        """Track a document when it is a memory file (None otherwise)."""
        mf = _memory_file(self.ls, uri)
        if mf is None:
            return None
        limit, share = settings_for(self.ls, mf.target)
        self._generation += 1000  # result ids of a reopened file never repeat
        buf = MemoryBuffer(
            uri=uri,
            folder=mf.folder,
            target=mf.target,
            version=version,
            text=text,
            limit=limit,
            near_share=share,
            encoding=encoding_of(self.ls),
            generation=self._generation,
        )
        self.by_uri[uri] = buf
        return buf

    def close(self, uri: str) -> MemoryBuffer | None:
        return self.by_uri.pop(uri, None)


def buffers(ls: Any) -> Buffers:
    """The `Buffers` of a server (created on first use)."""
    found = ls.__dict__.get("_my_agent_buffers")
    if found is None:
        found = Buffers(ls)
        ls.__dict__["_my_agent_buffers"] = found
    return found


def settings_for(ls: Any, target: str) -> tuple[int, float]:
    """(char limit, near-budget share) of a target from the server's settings."""
    config = getattr(ls, "config", None)
    if config is None:
        return DEFAULT_LIMITS.get(target, 2200), 0.9
    return int(config.limit(target)), float(config.near_budget_share)


def _memory_file(ls: Any, uri: str) -> Any:
    hook = getattr(ls, "memory_file", None)
    if hook is None:
        return None
    try:
        return hook(uri)
    except Exception:
        logger.exception("memory_file(%s) failed", uri)
        return None


def to_diagnostic(buf: MemoryBuffer, n: int, finding: Finding) -> types.Diagnostic:
    """The LSP diagnostic of a finding; `data` names the finding so code actions find its fixes."""
    conv = buf.converter
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=buf.uri, range=conv.range(r.start, r.end)),
            message=r.message,
        )
        for r in finding.related
    ]
    return types.Diagnostic(
        range=conv.range(finding.start, finding.end),
        message=finding.message,
        severity=types.DiagnosticSeverity(int(finding.severity)),
        code=finding.code,
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code in _UNNECESSARY else None,
        related_information=related or None,
        data={"id": n, "gen": buf.generation, "fixable": bool(finding.fixes)},
    )


def client_pulls(ls: Any) -> bool:
    """True when the client asks for diagnostics itself (`textDocument.diagnostic`)."""
    try:
        text_document = ls.client_capabilities.text_document
    except Exception:
        return False
    return text_document is not None and text_document.diagnostic is not None


def _client_refreshes(ls: Any) -> bool:
    try:
        ws = ls.client_capabilities.workspace
        return bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)
    except Exception:
        return False


def publish(ls: Any, buf: MemoryBuffer) -> None:
    """Push the buffer's diagnostics (push mode only)."""
    if client_pulls(ls):
        return
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(
            uri=buf.uri, diagnostics=buf.diagnostics, version=buf.version
        )
    )


def refresh_all(ls: Any) -> None:
    """Settings changed: re-lint open memory files and re-publish (or ask the client to re-pull)."""
    changed = False
    for buf in list(buffers(ls).by_uri.values()):
        if buf.set_settings(*settings_for(ls, buf.target)):
            changed = True
            publish(ls, buf)
    if changed and client_pulls(ls) and _client_refreshes(ls):
        try:
            ls.workspace_diagnostic_refresh(None)
        except Exception:
            logger.exception("workspace/diagnostic/refresh failed")


def _copy_change(change: Any) -> Any:
    rng = getattr(change, "range", None)
    if rng is None:
        return change
    return types.TextDocumentContentChangePartial(
        range=types.Range(
            start=types.Position(line=rng.start.line, character=rng.start.character),
            end=types.Position(line=rng.end.line, character=rng.end.character),
        ),
        text=change.text,
        range_length=change.range_length,
    )


def _guard_did_change(ls: Any) -> None:
    """Hand our didChange handler the changes exactly as the client sent them.

    pygls' built-in didChange first updates its own copy of the document, and on the way it clamps
    positions IN PLACE using `str.splitlines` lines (which also break at \\v, \\f, \\x1c-\\x1e,
    \\x85, \\u2028, \\u2029, unlike LSP) and to `len - 1` past a line's end: the params our handler
    then gets would no longer match the client's text. We keep a copy of the ranges and call the
    feature handler with it. For memory files our handler then hands pygls' workspace document the
    buffer's text (`_sync_workspace`), which is exact and O(1) where pygls' own update re-splits and
    re-joins every line; other files are updated by pygls as before.
    """
    fm = ls.protocol.fm
    original = fm.builtin_features.get(types.TEXT_DOCUMENT_DID_CHANGE)
    if original is None or getattr(original, "_my_agent_guard", False):
        return

    def did_change(params: types.DidChangeTextDocumentParams) -> Any:
        pristine = [_copy_change(change) for change in params.content_changes]
        if buffers(ls).get(params.text_document.uri) is None:  # not ours: pygls keeps it
            try:
                for change in params.content_changes:
                    ls.workspace.update_text_document(params.text_document, change)
            except Exception:
                logger.exception("pygls could not apply a change to %s", params.text_document.uri)
        handler = fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)
        if handler is not None:
            clean = types.DidChangeTextDocumentParams(
                text_document=params.text_document, content_changes=pristine
            )
            yield handler, (clean,), None

    did_change._my_agent_guard = True  # type: ignore[attr-defined]
    fm.builtin_features[types.TEXT_DOCUMENT_DID_CHANGE] = did_change


def _sync_workspace(ls: Any, buf: MemoryBuffer) -> None:
    """Give pygls' copy of the document (which other modules read) the buffer's exact text."""
    try:
        doc = ls.workspace.text_documents.get(unquote(buf.uri))
        if doc is not None:
            doc._source = buf.text
            doc.version = buf.version
    except Exception:
        logger.exception("could not update the workspace copy of %s", buf.uri)


def register(ls: MyAgentServer) -> None:
    """didOpen/didChange/didSave/didClose, push diagnostics and the pull provider."""
    _guard_did_change(ls)
    hooks = getattr(ls, "on_config_changed", None)
    if hooks is not None:
        hooks.append(lambda: refresh_all(ls))

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: MyAgentServer, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        buf = buffers(ls).open(doc.uri, doc.text, doc.version)
        if buf is not None:
            publish(ls, buf)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: MyAgentServer, params: types.DidChangeTextDocumentParams) -> None:
        buf = buffers(ls).get(params.text_document.uri)
        if buf is None:
            return
        for change in params.content_changes:
            buf.apply_change(change)
        buf.version = params.text_document.version
        _sync_workspace(ls, buf)
        publish(ls, buf)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: MyAgentServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        buf = buffers(ls).get(uri)
        if buf is not None:
            if params.text is not None and params.text != buf.text:
                buf.set_text(params.text, buf.version)
            publish(ls, buf)
        saved = getattr(ls, "memory_file_saved", None)
        if saved is not None and _memory_file(ls, uri) is not None:
            saved(uri)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: MyAgentServer, params: types.DidCloseTextDocumentParams) -> None:
        buf = buffers(ls).close(params.text_document.uri)
        if buf is not None and not client_pulls(ls):
            ls.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=buf.uri, diagnostics=[])
            )

    @ls.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier=SOURCE, inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )
    def pull(
        ls: MyAgentServer, params: types.DocumentDiagnosticParams
    ) -> types.DocumentDiagnosticReport:
        buf = buffers(ls).get(params.text_document.uri)
        if buf is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        if params.previous_result_id == buf.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=buf.result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=buf.diagnostics, result_id=buf.result_id
        )
