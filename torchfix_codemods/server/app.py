"""The pygls server: diagnostics on open/change/save, quick fixes, fix-all, and noqa.

Each code action names its finding's code and fix tier: safe fixes are offered as
preferred quick fixes; unsafe ones say they change behaviour. ``source.fixAll``
applies every safe fix (what ``fix`` does); "add noqa" silences one finding on the
line it is read from. Actions are computed from the document's current text when
the client asks, so an edit can never be applied to text it was not made for.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from torchfix_codemods import __version__
from torchfix_codemods.findings import Finding, Safety
from torchfix_codemods.server.analysis import Analysis
from torchfix_codemods.server.convert import diagnostic, fix_title, whole_text_edit
from torchfix_codemods.settings import ConfigError

FIX_ALL_KIND = types.CodeActionKind.SourceFixAll + ".torchfix-codemods"


class TorchfixServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "torchfix-codemods", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            notebook_document_sync=types.NotebookDocumentSyncOptions(notebook_selector=[
                types.NotebookDocumentFilterWithCells(
                    cells=[types.NotebookCellLanguage(language="python")])]))
        self.analysis: Analysis | None = None
        self.reported_config_error: str | None = None

    def workspace_analysis(self) -> Analysis:
        if self.analysis is None:
            self.analysis = Analysis(self.workspace.root_path)
        return self.analysis


def _path(uri: str) -> str | None:
    """The file a ``file:`` URI names; None for other schemes (unsaved buffers, cells)."""
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri)


def _analysable(path: str | None) -> bool:
    return path is not None and path.endswith(".py")


def _findings(server: TorchfixServer, uri: str) -> tuple[str, list[Finding]] | None:
    path = _path(uri)
    if not _analysable(path):
        return None
    document = server.workspace.get_text_document(uri)
    try:
        findings = server.workspace_analysis().findings(path, document.source)  # type: ignore[arg-type]
    except ConfigError as error:
        config_error(server, str(error))
        return document.source, []
    server.reported_config_error = None
    return document.source, findings


def config_error(server: TorchfixServer, message: str) -> None:
    if server.reported_config_error != message:
        server.reported_config_error = message
        server.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Error, message=f"torchfix-codemods: {message}"))


def publish(server: TorchfixServer, uri: str) -> None:
    found = _findings(server, uri)
    if found is None:
        return
    text, findings = found
    lines = text.splitlines()
    document = server.workspace.get_text_document(uri)
    server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=uri, version=document.version,
        diagnostics=[diagnostic(lines, finding) for finding in findings]))


def publish_open(server: TorchfixServer) -> None:
    """Publish again for every open document and notebook: a save rebuilds the project
    index (and a saved pyproject.toml the settings), so a finding in one file can appear or
    go away because another file changed on disk."""
    from torchfix_codemods.server.notebooks import publish_notebook

    for document in list(server.workspace.text_documents.values()):
        if server.workspace.get_notebook_document(cell_uri=document.uri) is None:
            publish(server, document.uri)
    for notebook in list(server.workspace.notebook_documents.values()):
        publish_notebook(server, notebook.uri)


def _edit(uri: str, version: int | None, old: str, new: str) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=[whole_text_edit(old, new)])])


def overlaps(finding: Finding, lsp_range: types.Range) -> bool:
    first, last = finding.line - 1, finding.end_line - 1
    return not (last < lsp_range.start.line or first > lsp_range.end.line)


def code_actions(server: TorchfixServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    wanted = params.context.only

    def allowed(kind: str) -> bool:
        return not wanted or any(kind == only or kind.startswith(only + ".") for only in wanted)

    notebook = server.workspace.get_notebook_document(cell_uri=uri)
    if notebook is not None:
        from torchfix_codemods.server.notebooks import notebook_actions

        return notebook_actions(server, params, notebook, allowed)
    found = _findings(server, uri)
    if found is None:
        return []
    text, findings = found
    path: str = _path(uri)  # type: ignore[assignment]
    analysis = server.workspace_analysis()
    version = server.workspace.get_text_document(uri).version
    lines = text.splitlines()
    actions: list[types.CodeAction] = []

    if allowed(types.CodeActionKind.QuickFix):
        for finding in findings:
            if not overlaps(finding, params.range) or finding.code == "TFC000":
                continue
            where = (finding.line, finding.column, finding.code)
            shown = diagnostic(lines, finding)
            if finding.fixable:
                unsafe = finding.fix.safety is Safety.UNSAFE  # type: ignore[union-attr]
                new = analysis.fixed(path, text, only=where, unsafe=unsafe)
                if new is not None:
                    actions.append(types.CodeAction(
                        title=fix_title(finding), kind=types.CodeActionKind.QuickFix,
                        diagnostics=[shown], is_preferred=not unsafe,
                        edit=_edit(uri, version, text, new)))
            if not finding.internal_error:
                new = analysis.with_noqa(path, text, only=where)
                if new is not None:
                    actions.append(types.CodeAction(
                        title=f"Add `# noqa: {finding.code}` (silence this {finding.code})",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[shown],
                        edit=_edit(uri, version, text, new)))
    if allowed(FIX_ALL_KIND) and any(f.fixable and f.fix.safety is Safety.SAFE  # type: ignore[union-attr]
                                     for f in findings):
        new = analysis.fixed(path, text)
        if new is not None:
            actions.append(types.CodeAction(
                title="Fix all safe torchfix-codemods findings", kind=FIX_ALL_KIND,
                edit=_edit(uri, version, text, new)))
    return actions


def build_server() -> TorchfixServer:
    server = TorchfixServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TorchfixServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TorchfixServer, params: types.DidChangeTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: TorchfixServer, params: types.DidSaveTextDocumentParams) -> None:
        path = _path(params.text_document.uri)
        if path is not None:
            ls.workspace_analysis().saved(path)
        publish_open(ls)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TorchfixServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=params.text_document.uri, diagnostics=[]))

    from torchfix_codemods.server.notebooks import clear_notebook, publish_notebook

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: TorchfixServer, params: types.DidOpenNotebookDocumentParams) -> None:
        publish_notebook(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: TorchfixServer,
                        params: types.DidChangeNotebookDocumentParams) -> None:
        publish_notebook(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: TorchfixServer, params: types.DidSaveNotebookDocumentParams) -> None:
        path = _path(params.notebook_document.uri)
        if path is not None:
            ls.workspace_analysis().saved(path)
        publish_open(ls)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: TorchfixServer, params: types.DidCloseNotebookDocumentParams) -> None:
        clear_notebook(ls, params)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]))
    def code_action(ls: TorchfixServer, params: types.CodeActionParams) -> list[Any]:
        return code_actions(ls, params)  # type: ignore[return-value]

    return server


def serve() -> None:
    """Serve over stdin/stdout until the client says exit."""
    build_server().start_io()
