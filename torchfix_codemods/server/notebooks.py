"""Notebooks the client syncs cell by cell (LSP 3.17 ``notebookDocument/*``).

The code cells are put back together as an nbformat document and analysed as a
``.ipynb`` file is (magics hidden, findings located by cell), so an editor shows
what ``check`` shows. Diagnostics are published on each cell's own URI; a code
action's edit changes the cells its fix touches, each with its own text edit.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from lsprotocol import types

from torchfix_codemods.findings import Finding, Safety
from torchfix_codemods.server.convert import diagnostic, fix_title, whole_text_edit
from torchfix_codemods.settings import ConfigError

if TYPE_CHECKING:
    from torchfix_codemods.server.app import TorchfixServer

SUFFIX = ".ipynb"


def _document(texts: list[str]) -> str:
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": text} for text in texts]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                      indent=1)


def _cells_of(document: str) -> list[str]:
    return ["".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            for cell in json.loads(document)["cells"]]


class NotebookView:
    """One synced notebook: its code cells' URIs and texts, and the path it stands for."""

    def __init__(self, server: TorchfixServer, notebook: types.NotebookDocument) -> None:
        from pygls.uris import to_fs_path

        self.uris = [cell.document for cell in notebook.cells
                     if cell.kind == types.NotebookCellKind.Code]
        self.texts = [server.workspace.get_text_document(uri).source for uri in self.uris]
        self.versions = [server.workspace.get_text_document(uri).version for uri in self.uris]
        path = to_fs_path(notebook.uri) if notebook.uri.startswith("file:") else None
        self.path = path if path and path.endswith(SUFFIX) else (path or "notebook") + SUFFIX
        self.json = _document(self.texts)

    def edit(self, new_json: str) -> types.WorkspaceEdit | None:
        """The edit turning each changed cell into the new document's cell."""
        changes = []
        for uri, version, old, new in zip(self.uris, self.versions, self.texts,
                                          _cells_of(new_json), strict=True):
            if new != old:
                changes.append(types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version),
                    edits=[whole_text_edit(old, new)]))
        return types.WorkspaceEdit(document_changes=changes) if changes else None


def _findings(server: TorchfixServer, view: NotebookView) -> list[Finding] | None:
    from torchfix_codemods.server.app import config_error

    try:
        return server.workspace_analysis().findings(view.path, view.json)
    except ConfigError as error:
        config_error(server, str(error))
        return None


def publish_notebook(server: TorchfixServer, notebook_uri: str) -> None:
    notebook = server.workspace.get_notebook_document(notebook_uri=notebook_uri)
    if notebook is None:
        return
    view = NotebookView(server, notebook)
    findings = _findings(server, view) or []
    for number, (uri, text) in enumerate(zip(view.uris, view.texts, strict=True), start=1):
        lines = text.splitlines()
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=[diagnostic(lines, f) for f in findings if f.cell == number]))


def clear_notebook(server: TorchfixServer, params: types.DidCloseNotebookDocumentParams) -> None:
    for cell in params.cell_text_documents:
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=cell.uri, diagnostics=[]))


def notebook_actions(server: TorchfixServer, params: types.CodeActionParams,
                     notebook: types.NotebookDocument,
                     allowed: object) -> list[types.CodeAction]:
    """Quick fixes and noqa for the findings of the requested cell, and fix-all for the
    notebook."""
    from torchfix_codemods.server.app import FIX_ALL_KIND, overlaps

    view = NotebookView(server, notebook)
    if params.text_document.uri not in view.uris:
        return []
    number = view.uris.index(params.text_document.uri) + 1
    findings = _findings(server, view)
    if not findings:
        return []
    analysis = server.workspace_analysis()
    lines = view.texts[number - 1].splitlines()
    actions: list[types.CodeAction] = []
    if allowed(types.CodeActionKind.QuickFix):  # type: ignore[operator]
        for finding in findings:
            if finding.cell != number or not overlaps(finding, params.range) \
                    or finding.code == "TFC000":
                continue
            where = (finding.line, finding.column, finding.code)
            shown = diagnostic(lines, finding)
            if finding.fixable:
                unsafe = finding.fix.safety is Safety.UNSAFE  # type: ignore[union-attr]
                new = analysis.fixed(view.path, view.json, only=where, unsafe=unsafe,
                                     cell=number)
                edit = view.edit(new) if new is not None else None
                if edit is not None:
                    actions.append(types.CodeAction(
                        title=fix_title(finding), kind=types.CodeActionKind.QuickFix,
                        diagnostics=[shown], is_preferred=not unsafe, edit=edit))
            if not finding.internal_error:
                new = analysis.with_noqa(view.path, view.json, only=where, cell=number)
                edit = view.edit(new) if new is not None else None
                if edit is not None:
                    actions.append(types.CodeAction(
                        title=f"Add `# noqa: {finding.code}` (silence this {finding.code})",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[shown], edit=edit))
    if allowed(FIX_ALL_KIND) and any(  # type: ignore[operator]
            f.fixable and f.fix.safety is Safety.SAFE for f in findings):  # type: ignore[union-attr]
        new = analysis.fixed(view.path, view.json)
        edit = view.edit(new) if new is not None else None
        if edit is not None:
            actions.append(types.CodeAction(title="Fix all safe torchfix-codemods findings",
                                            kind=FIX_ALL_KIND, edit=edit))
    return actions
