//! Language servers over the wire: start, list, hover, definition,
//! references, symbols, diagnostics and stop against a real `pylsp`
//! (python-lsp-server, installed by `.ci/run`) on a small Python project in
//! the server workspace, and the errors.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{Server, guard};
use proto_code_agent::pb;
use tonic::Code;

const APP: &str = r#"import os


def greet(name):
    """Return a friendly greeting."""
    return "hello " + name


def main():
    print(greet("world"))
    print(greet("again"))
"#;

const BROKEN: &str = "def f():\n    return undefined_thing\n";

/// Where `greet` is called first: line 9, character 10 (0-indexed).
const CALL: (u32, u32) = (9, 10);

/// Whether `program` is an executable file.
fn executable(program: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(program).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `name` is on this process's `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| executable(p))
}

/// Makes `pylsp` findable on `PATH`, where the engine looks for language
/// servers (as `gantry serve` does): `.ci/run` gives its path in
/// `GANTRY_TEST_PYLSP`, in a directory that need not be on `PATH`. False
/// (the test skipped, or failed under CI) when it is not installed.
fn pylsp_on_path() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let given = std::env::var_os("GANTRY_TEST_PYLSP").map(PathBuf::from);
        if let Some(dir) = given
            .filter(|p| p.is_absolute() && executable(p))
            .and_then(|p| p.parent().map(Path::to_path_buf))
        {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = std::iter::once(dir).chain(std::env::split_paths(&path));
            let joined = std::env::join_paths(dirs).expect("PATH");
            // SAFETY: done once, before this test's server or any process is
            // started; every test of this binary calls this first.
            unsafe { std::env::set_var("PATH", joined) };
        }
        if on_path("pylsp").is_some() {
            return true;
        }
        let why = "pylsp (python-lsp-server) is not installed: run `.ci/run`";
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("SKIPPED: {why}");
        false
    })
}

/// The workspace with `app.py` and `broken.py` written in it.
fn project(s: &Server) -> PathBuf {
    let ws = s.workspace();
    std::fs::write(ws.join("app.py"), APP).expect("app.py");
    std::fs::write(ws.join("broken.py"), BROKEN).expect("broken.py");
    ws
}

fn uri(file: &Path) -> String {
    format!("file://{}", file.display())
}

fn start(language: &str, root_uri: &str) -> pb::StartLspServerRequest {
    pb::StartLspServerRequest {
        language: language.into(),
        root_uri: root_uri.into(),
    }
}

async fn list(s: &mut Server) -> Vec<pb::LspServerInfo> {
    s.client
        .list_lsp_servers(pb::ListLspServersRequest {})
        .await
        .expect("list")
        .into_inner()
        .servers
}

async fn hover(
    s: &mut Server,
    file: &str,
    (line, column): (u32, u32),
) -> Result<pb::LspHoverResponse, tonic::Status> {
    let request = pb::LspHoverRequest {
        file_path: file.into(),
        line,
        column,
    };
    guard("LspHover", s.client.lsp_hover(request))
        .await
        .map(|r| r.into_inner())
}

async fn references(s: &mut Server, file: &str, include_declaration: bool) -> Vec<u32> {
    let request = pb::LspReferencesRequest {
        file_path: file.into(),
        line: CALL.0,
        column: CALL.1,
        include_declaration,
    };
    let found = guard("LspReferences", s.client.lsp_references(request))
        .await
        .expect("references")
        .into_inner()
        .locations;
    let mut lines: Vec<u32> = found
        .iter()
        .filter(|l| l.uri.ends_with("/app.py"))
        .map(|l| l.range.and_then(|r| r.start).map_or(u32::MAX, |p| p.line))
        .collect();
    lines.sort();
    lines
}

async fn diagnostics(
    s: &mut Server,
    file: Option<&str>,
) -> Result<Vec<pb::LspDiagnostic>, tonic::Status> {
    let request = pb::LspDiagnosticsRequest {
        file_path: file.map(str::to_owned),
    };
    guard("LspDiagnostics", s.client.lsp_diagnostics(request))
        .await
        .map(|r| r.into_inner().diagnostics)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_server_answers_about_the_workspace_files_until_stopped() {
    if !pylsp_on_path() {
        return;
    }
    let mut s = Server::start(vec![]).await;
    let ws = project(&s);
    assert!(list(&mut s).await.is_empty());

    // No root: the server workspace.
    let started = guard(
        "StartLspServer",
        s.client.start_lsp_server(start("Python", "")),
    )
    .await
    .expect("pylsp starts")
    .into_inner();
    assert!(started.success, "{started:?}");
    assert!(
        started.message.contains(&ws.display().to_string()),
        "{started:?}"
    );
    let info = started.server_info.expect("server info");
    assert_eq!(
        (info.language.as_str(), info.name.as_str()),
        ("python", "pylsp")
    );
    assert!(info.running && info.version.is_some(), "{info:?}");
    // The same root as a percent-encoded file URI (`%77` is `w`): the
    // server already running there.
    let encoded = uri(&ws).replace("/ws", "/%77s");
    let again = guard(
        "StartLspServer",
        s.client.start_lsp_server(start("py", &encoded)),
    )
    .await
    .expect("start again")
    .into_inner();
    assert_eq!(again.server_info, Some(info.clone()));
    assert_eq!(list(&mut s).await, vec![info]);

    // A relative path is the workspace's file; positions are 0-indexed.
    let shown = hover(&mut s, "app.py", CALL).await.expect("hover");
    assert!(
        shown.found && shown.content.contains("greet(name)"),
        "{shown:?}"
    );
    let blank = hover(&mut s, "app.py", (1, 0)).await.expect("hover");
    assert!(!blank.found && blank.content.is_empty(), "{blank:?}");

    let app = ws.join("app.py");
    let request = pb::LspDefinitionRequest {
        file_path: uri(&app),
        line: CALL.0,
        column: CALL.1,
    };
    let defs = guard("LspDefinition", s.client.lsp_definition(request))
        .await
        .expect("definition")
        .into_inner()
        .locations;
    assert_eq!(defs.len(), 1, "{defs:?}");
    assert_eq!(defs[0].uri, uri(&app));
    let at = defs[0].range.and_then(|r| r.start).expect("start");
    assert_eq!((at.line, at.character), (3, 4), "`greet` in `def greet`");

    let app_path = app.display().to_string();
    assert_eq!(references(&mut s, &app_path, true).await, [3, 9, 10]);
    assert_eq!(references(&mut s, "app.py", false).await, [9, 10]);

    // pylsp cannot search workspace symbols: not the request's fault.
    let request = pb::LspSymbolsRequest {
        query: "greet".into(),
        limit: 0,
    };
    let err = guard("LspSymbols", s.client.lsp_symbols(request))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("pylsp"), "{err:?}");

    let broken = diagnostics(&mut s, Some("broken.py"))
        .await
        .expect("diagnostics");
    let undefined = broken
        .iter()
        .find(|d| d.message.contains("undefined name 'undefined_thing'"))
        .unwrap_or_else(|| panic!("pyflakes' undefined name: {broken:?}"));
    assert_eq!(undefined.uri, uri(&ws.join("broken.py")));
    assert_eq!(undefined.severity, "error");
    assert_eq!(undefined.source.as_deref(), Some("pyflakes"));
    assert_eq!(
        undefined.range.and_then(|r| r.start).map(|p| p.line),
        Some(1)
    );
    let all = diagnostics(&mut s, None).await.expect("diagnostics");
    assert!(
        all.iter().any(|d| d.message.contains("undefined_thing")),
        "{all:?}"
    );

    let stop = |language: &str| pb::StopLspServerRequest {
        language: language.into(),
    };
    let stopped = s
        .client
        .stop_lsp_server(stop("python"))
        .await
        .expect("stop");
    assert!(stopped.into_inner().success);
    assert!(list(&mut s).await.is_empty());
    let err = s.client.stop_lsp_server(stop("python")).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = hover(&mut s, "app.py", CALL).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_and_missing_servers_are_told_apart() {
    let mut s = Server::start(vec![]).await;
    project(&s);
    let invalid = |err: tonic::Status, field: &str| {
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains(field), "{field}: {err:?}");
    };
    let err = s.client.start_lsp_server(start(" ", "")).await.unwrap_err();
    invalid(err, "language");
    let err = s
        .client
        .start_lsp_server(start("cobol", ""))
        .await
        .unwrap_err();
    invalid(err, "known languages");
    let err = s
        .client
        .start_lsp_server(start("python", "https://example.invalid/project"))
        .await
        .unwrap_err();
    invalid(err, "root_uri");
    let err = s
        .client
        .start_lsp_server(start("python", "file://elsewhere/project"))
        .await
        .unwrap_err();
    invalid(err, "root_uri");
    let err = s
        .client
        .start_lsp_server(start("python", "file:///tmp/bad%zzescape"))
        .await
        .unwrap_err();
    invalid(err, "root_uri");
    let err = s
        .client
        .start_lsp_server(start("python", "no-such-dir"))
        .await
        .unwrap_err();
    invalid(err, "not an existing directory");

    // A language whose server is not installed here: named, and a
    // precondition rather than a bad request.
    let missing = [("go", "gopls"), ("cpp", "clangd")]
        .into_iter()
        .find(|(_, program)| on_path(program).is_none());
    if let Some((language, program)) = missing {
        let err = s
            .client
            .start_lsp_server(start(language, ""))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
        assert!(err.message().contains(program), "{err:?}");
    }
    assert!(list(&mut s).await.is_empty());

    let err = hover(&mut s, "", (0, 0)).await.unwrap_err();
    invalid(err, "file_path");
    let err = hover(&mut s, "notes.cobol", (0, 0)).await.unwrap_err();
    invalid(err, "notes.cobol");
    // No server runs: not found, for a file and for the whole workspace.
    let err = hover(&mut s, "app.py", CALL).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let err = diagnostics(&mut s, None).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let request = pb::LspSymbolsRequest {
        query: String::new(),
        limit: 5,
    };
    let err = s.client.lsp_symbols(request).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    let request = pb::StopLspServerRequest {
        language: String::new(),
    };
    let err = s.client.stop_lsp_server(request).await.unwrap_err();
    invalid(err, "language");
    let request = pb::StopLspServerRequest {
        language: "python".into(),
    };
    let err = s.client.stop_lsp_server(request).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
}
