"""The language server, driven over stdio by a real LSP client (pygls's), as an editor drives it.

``python -m torchfix_codemods server`` is started as a subprocess; the test opens a
document, waits for the diagnostics it publishes, asks for code actions, applies
the edit of the safe fix as an editor would, sends the new text and waits for the
diagnostics to be empty.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402
from pygls.uris import from_fs_path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "import torch\n\nx = torch.range(0, 10)\n"
TIMEOUT = 60


def _position_offset(text: str, position: types.Position) -> int:
    lines = text.splitlines(keepends=True)
    before = sum(len(line) for line in lines[: position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    units = 0
    for index, char in enumerate(line):
        if units >= position.character:
            return before + index
        units += len(char.encode("utf-16-le")) // 2
    return before + len(line)


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (non-overlapping) as an editor does, last first."""
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        start = _position_offset(text, edit.range.start)
        end = _position_offset(text, edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


class Session:
    """A client connected to the server, collecting published diagnostics per URI."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = LanguageClient("torchfix-test", "1")
        self.published: asyncio.Queue[types.PublishDiagnosticsParams] = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.published.put_nowait(params)  # type: ignore[arg-type]

    async def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        await self.client.start_io(sys.executable, "-m", "torchfix_codemods", "server",
                                   env=env, cwd=str(self.root))
        await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(self.root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(self.root)),
                                                     name="w")])), TIMEOUT)
        self.client.initialized(types.InitializedParams())

    async def next_diagnostics(self) -> types.PublishDiagnosticsParams:
        return await asyncio.wait_for(self.published.get(), TIMEOUT)

    async def stop(self) -> None:
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT)
        self.client.exit(None)
        await self.client.stop()


def _run(body) -> None:  # type: ignore[no-untyped-def]
    asyncio.run(asyncio.wait_for(body(), 4 * TIMEOUT))


def test_open_fix_and_the_diagnostic_goes_away(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    uri = from_fs_path(str(path))

    async def body() -> None:
        session = Session(tmp_path)
        await session.start()
        try:
            session.client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                     text=SOURCE)))
            published = await session.next_diagnostics()
            assert published.uri == uri
            [found] = published.diagnostics
            assert found.code == "TFC406"
            assert found.source == "torchfix-codemods"
            assert found.range.start == types.Position(line=2, character=4)
            actions = await asyncio.wait_for(session.client.text_document_code_action_async(
                types.CodeActionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), range=found.range,
                    context=types.CodeActionContext(diagnostics=[found]))), TIMEOUT)
            titles = [action.title for action in actions]
            fix = next(a for a in actions if a.title.startswith("Fix TFC406 (safe)"))
            assert fix.is_preferred and fix.kind == types.CodeActionKind.QuickFix
            assert any(t.startswith("Add `# noqa: TFC406`") for t in titles), titles
            assert any(a.kind.startswith("source.fixAll") for a in actions), titles
            [change] = fix.edit.document_changes
            assert change.text_document.uri == uri
            fixed = apply(SOURCE, change.edits)
            assert fixed == ("import torch\n\n"
                             "x = torch.arange(0, 11, dtype=torch.get_default_dtype())\n")
            session.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
            after = await session.next_diagnostics()
            assert after.uri == uri and after.version == 2
            assert list(after.diagnostics) == []
            assert path.read_text() == SOURCE  # the server never writes files
        finally:
            await session.stop()

    _run(body)


async def _open(session: Session, uri: str, text: str) -> types.PublishDiagnosticsParams:
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=text)))
    return await session.next_diagnostics()


async def _actions(session: Session, uri: str, diagnostic: types.Diagnostic,
                   only: list[str] | None = None) -> list[types.CodeAction]:
    return await asyncio.wait_for(session.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic], only=only))), TIMEOUT)


def test_unsafe_fixes_say_so_noqa_silences_and_excluded_files_stay_quiet(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchfix-codemods]\nextend-exclude = ["third_party/"]\nignore = ["TFC002"]\n')
    (tmp_path / "third_party").mkdir()
    vendored = tmp_path / "third_party" / "x.py"
    vendored.write_text(SOURCE)
    load = 'import torch\n\nm = torch.load("w.pt")  # keep\ny = torch.ger(a, b)\n'
    path = tmp_path / "load.py"
    path.write_text(load)
    uri = from_fs_path(str(path))

    async def body() -> None:
        session = Session(tmp_path)
        await session.start()
        try:
            published = await _open(session, uri, load)
            assert [d.code for d in published.diagnostics] == ["TFC001", "TFC406"]
            first = published.diagnostics[0]
            actions = await _actions(session, uri, first, [types.CodeActionKind.QuickFix])
            fix = next(a for a in actions if a.title.startswith("Fix TFC001"))
            assert "(unsafe: changes behaviour, review it)" in fix.title
            assert not fix.is_preferred
            noqa = next(a for a in actions if a.title.startswith("Add `# noqa: TFC001`"))
            assert not any(a.kind.startswith("source") for a in actions)  # `only` honoured
            silenced = apply(load, noqa.edit.document_changes[0].edits)
            assert silenced == load.replace("# keep", "# keep  # noqa: TFC001")
            # Fix all applies only the safe fix (TFC406), not TFC001's unsafe one.
            fix_all = await _actions(session, uri, first, [types.CodeActionKind.SourceFixAll])
            [everything] = fix_all
            fixed_all = apply(load, everything.edit.document_changes[0].edits)
            assert "torch.outer(a, b)" in fixed_all and 'torch.load("w.pt")  # keep' in fixed_all
            session.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=silenced)]))
            after = await session.next_diagnostics()
            assert [d.code for d in after.diagnostics] == ["TFC406"]
            excluded = await _open(session, from_fs_path(str(vendored)), SOURCE)
            assert list(excluded.diagnostics) == []
        finally:
            await session.stop()

    _run(body)


def test_a_notebook_synced_cell_by_cell(tmp_path: Path) -> None:
    """notebookDocument sync: diagnostics on each cell's URI, located in the cell; the fix
    edits the cell; after the change the cell's diagnostics are empty."""
    notebook_uri = from_fs_path(str(tmp_path / "nb.ipynb"))
    cells = {"cell-1": "%matplotlib inline\nimport torch\n",
             "cell-2": "# title", "cell-3": "x = 1\ny = torch.ger(a, b)\n"}
    kinds = {"cell-1": types.NotebookCellKind.Code, "cell-2": types.NotebookCellKind.Markup,
             "cell-3": types.NotebookCellKind.Code}
    uris = {name: f"vscode-notebook-cell:{tmp_path}/nb.ipynb#{name}" for name in cells}

    async def body() -> None:
        session = Session(tmp_path)
        await session.start()
        try:
            session.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=notebook_uri, notebook_type="jupyter-notebook", version=1,
                    cells=[types.NotebookCell(kind=kinds[name], document=uris[name])
                           for name in cells]),
                cell_text_documents=[types.TextDocumentItem(
                    uri=uris[name], language_id="python" if name != "cell-2" else "markdown",
                    version=1, text=text) for name, text in cells.items()]))
            published = {}
            for _ in range(2):  # the two code cells, each on its own URI
                params = await session.next_diagnostics()
                published[params.uri] = list(params.diagnostics)
            assert published[uris["cell-1"]] == []
            [found] = published[uris["cell-3"]]
            assert found.code == "TFC406"
            assert found.range.start == types.Position(line=1, character=4)
            actions = await _actions(session, uris["cell-3"], found)
            fix = next(a for a in actions if a.title.startswith("Fix TFC406 (safe)"))
            [change] = fix.edit.document_changes
            assert change.text_document.uri == uris["cell-3"]
            fixed = apply(cells["cell-3"], change.edits)
            assert fixed == "x = 1\ny = torch.outer(a, b)\n"
            noqa = next(a for a in actions if a.title.startswith("Add `# noqa: TFC406`"))
            assert apply(cells["cell-3"], noqa.edit.document_changes[0].edits) == \
                "x = 1\ny = torch.ger(a, b)  # noqa: TFC406\n"
            session.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(
                    uri=notebook_uri, version=2),
                change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
                    text_content=[types.NotebookDocumentCellContentChanges(
                        document=types.VersionedTextDocumentIdentifier(
                            uri=uris["cell-3"], version=2),
                        changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
            after = {}
            for _ in range(2):
                params = await session.next_diagnostics()
                after[params.uri] = list(params.diagnostics)
            assert after == {uris["cell-1"]: [], uris["cell-3"]: []}
        finally:
            await session.stop()

    _run(body)


def test_the_workspace_index_reaches_open_files_and_a_save_refreshes_them(tmp_path: Path) -> None:
    """`torch` here is bound only by `from utils import *`: the finding exists through the
    project index of the workspace (the file alone binds no `torch`). Saving utils.py without
    torch rebuilds the index and the still-open train.py is published again, now clean."""
    utils = tmp_path / "utils.py"
    utils.write_text("import torch\n")
    train = tmp_path / "train.py"
    text = "from utils import *\n\nx = torch.range(0, 10)\n"
    train.write_text(text)
    train_uri, utils_uri = from_fs_path(str(train)), from_fs_path(str(utils))

    async def body() -> None:
        session = Session(tmp_path)
        await session.start()
        try:
            published = await _open(session, train_uri, text)
            assert [d.code for d in published.diagnostics] == ["TFC406"]
            [found] = published.diagnostics
            [fix] = [a for a in await _actions(session, train_uri, found)
                     if a.title.startswith("Fix TFC406 (safe)")]
            assert apply(text, fix.edit.document_changes[0].edits) == (
                "from utils import *\n\nx = torch.arange(0, 11, dtype=torch.get_default_dtype())\n")
            utils.write_text("import numpy\n")
            opened = await _open(session, utils_uri, "import numpy\n")
            assert opened.uri == utils_uri and list(opened.diagnostics) == []
            session.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=utils_uri)))
            after = {}
            while train_uri not in after:
                params = await session.next_diagnostics()
                after[params.uri] = list(params.diagnostics)
            assert after[train_uri] == []
        finally:
            await session.stop()

    _run(body)


def test_without_pygls_the_server_command_says_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from typer.testing import CliRunner

    from torchfix_codemods.cli import app

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pygls" else real(name, *a))
    result = CliRunner().invoke(app, ["server"])
    assert result.exit_code == 2
    assert result.output.strip() == ("torchfix-codemods: error: server needs pygls: "
                                     "pip install 'torchfix-codemods[server]'")
