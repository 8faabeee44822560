"""Language servers: start, list, hover, definition, references, symbols,
diagnostics, stop, against a real `pylsp` (python-lsp-server, installed by
`.ci/run`) on a small Python project in the server's workspace.

`gantry serve` finds language servers on its PATH only, and `.ci/run` gives
pylsp's path (GANTRY_TEST_PYLSP) in a directory that need not be on it: the
server is started with that directory on its PATH."""

import os
import pathlib
import shutil
import sysconfig

import grpc
import pytest

from conftest import HANG_GUARD, Gantry, code_of

APP = '''import os


def greet(name):
    """Return a friendly greeting."""
    return "hello " + name


def main():
    print(greet("world"))
    print(greet("again"))
'''
BROKEN = "def f():\n    return undefined_thing\n"
# Where `greet` is called first (0-indexed).
CALL = dict(line=9, column=10)


def pylsp():
    """pylsp's absolute path, found as `.ci/run` finds it."""
    candidates = [
        os.environ.get("GANTRY_TEST_PYLSP"),
        os.path.join(sysconfig.get_path("scripts"), "pylsp"),
        shutil.which("pylsp"),
    ]
    for path in candidates:
        if path and os.path.isabs(path) and os.access(path, os.X_OK):
            return path
    pytest.fail("pylsp (python-lsp-server) is not installed: run .ci/run")


@pytest.fixture
def served(pb, tmp_path, monkeypatch):
    """A `gantry serve` whose PATH has pylsp, and a Python project in its workspace."""
    monkeypatch.setenv("PATH", os.path.dirname(pylsp()) + os.pathsep + os.environ.get("PATH", ""))
    server = Gantry(pb, tmp_path)
    (server.workspace / "app.py").write_text(APP)
    (server.workspace / "broken.py").write_text(BROKEN)
    yield server
    server.stop()


def lines_of(locations, suffix):
    return sorted(l.range.start.line for l in locations if l.uri.endswith(suffix))


def test_a_python_server_answers_about_workspace_files_until_stopped(served):
    pb, stub = served.pb, served.stub
    ws = served.workspace.resolve()
    assert not stub.ListLspServers(pb.ListLspServersRequest(), timeout=HANG_GUARD).servers

    started = stub.StartLspServer(pb.StartLspServerRequest(language="python", root_uri=ws.as_uri()), timeout=60)
    assert started.success, started
    info = started.server_info
    assert (info.language, info.name, info.running) == ("python", "pylsp", True)
    assert info.HasField("version")
    assert list(stub.ListLspServers(pb.ListLspServersRequest(), timeout=HANG_GUARD).servers) == [info]

    # Relative to the workspace; positions are 0-indexed.
    hover = stub.LspHover(pb.LspHoverRequest(file_path="app.py", **CALL), timeout=HANG_GUARD)
    assert hover.found and "greet(name)" in hover.content, hover
    blank = stub.LspHover(pb.LspHoverRequest(file_path="app.py", line=1, column=0), timeout=HANG_GUARD)
    assert not blank.found and blank.content == ""

    app_uri = (ws / "app.py").as_uri()
    definition = stub.LspDefinition(pb.LspDefinitionRequest(file_path=app_uri, **CALL), timeout=HANG_GUARD)
    assert [(l.uri, l.range.start.line, l.range.start.character) for l in definition.locations] == [(app_uri, 3, 4)]
    with_decl = stub.LspReferences(
        pb.LspReferencesRequest(file_path=str(ws / "app.py"), include_declaration=True, **CALL), timeout=HANG_GUARD
    )
    assert lines_of(with_decl.locations, "/app.py") == [3, 9, 10]
    without = stub.LspReferences(pb.LspReferencesRequest(file_path="app.py", **CALL), timeout=HANG_GUARD)
    assert lines_of(without.locations, "/app.py") == [9, 10]

    # pylsp has no workspace symbol search: a precondition, named.
    code, details = code_of(lambda: stub.LspSymbols(pb.LspSymbolsRequest(query="greet"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and "pylsp" in details, (code, details)

    diagnostics = stub.LspDiagnostics(pb.LspDiagnosticsRequest(file_path="broken.py"), timeout=HANG_GUARD).diagnostics
    undefined = [d for d in diagnostics if "undefined name 'undefined_thing'" in d.message]
    assert undefined, diagnostics
    assert (undefined[0].severity, undefined[0].source, undefined[0].range.start.line) == ("error", "pyflakes", 1)
    assert undefined[0].uri == (ws / "broken.py").as_uri()
    every = stub.LspDiagnostics(pb.LspDiagnosticsRequest(), timeout=HANG_GUARD).diagnostics
    assert any("undefined_thing" in d.message for d in every)

    assert stub.StopLspServer(pb.StopLspServerRequest(language="python"), timeout=HANG_GUARD).success
    assert not stub.ListLspServers(pb.ListLspServersRequest(), timeout=HANG_GUARD).servers
    code, _ = code_of(lambda: stub.StopLspServer(pb.StopLspServerRequest(language="python"), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND
    code, _ = code_of(lambda: stub.LspHover(pb.LspHoverRequest(file_path="app.py", **CALL), timeout=HANG_GUARD))
    assert code == grpc.StatusCode.NOT_FOUND


def test_lsp_bad_requests_and_missing_servers(gantry):
    pb, stub = gantry.pb, gantry.stub

    def fails(call, expected, text):
        code, details = code_of(call)
        assert code == expected and text in details, (code, details)

    invalid = grpc.StatusCode.INVALID_ARGUMENT
    start = lambda **r: lambda: stub.StartLspServer(pb.StartLspServerRequest(**r), timeout=HANG_GUARD)
    fails(start(), invalid, "language")
    fails(start(language="cobol"), invalid, "known languages")
    fails(start(language="python", root_uri="https://example.invalid/p"), invalid, "root_uri")
    fails(start(language="python", root_uri="no-such-dir"), invalid, "not an existing directory")
    fails(lambda: stub.LspHover(pb.LspHoverRequest(), timeout=HANG_GUARD), invalid, "file_path")
    fails(lambda: stub.StopLspServer(pb.StopLspServerRequest(), timeout=HANG_GUARD), invalid, "language")

    not_found = grpc.StatusCode.NOT_FOUND
    fails(lambda: stub.LspDefinition(pb.LspDefinitionRequest(file_path="app.py"), timeout=HANG_GUARD), not_found, "python")
    fails(lambda: stub.LspDiagnostics(pb.LspDiagnosticsRequest(), timeout=HANG_GUARD), not_found, "language server")
    fails(lambda: stub.LspSymbols(pb.LspSymbolsRequest(limit=5), timeout=HANG_GUARD), not_found, "language server")
    fails(lambda: stub.StopLspServer(pb.StopLspServerRequest(language="python"), timeout=HANG_GUARD), not_found, "python")
