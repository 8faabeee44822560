//! Below `danger-full-access`, no client has the server run a command of
//! its choosing outside the sandbox: an MCP stdio server and a scheduled
//! command are exactly that, so a server whose ceiling
//! (`EngineConfig::max_sandbox`) is lower refuses both, and a command job
//! stored before the ceiling was lowered runs no more. What needs no
//! command (an MCP server over HTTP, a prompt job) is still taken.

use std::path::Path;
use std::sync::Arc;

use gantry_core::{Engine, EngineBuilder, EngineConfig, EngineError, NewJob, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::SqliteStore;
use gantry_types::SandboxMode;
use gantry_types::cron::{ExecutionStatus, JobAction};
use gantry_types::mcp::{McpServerConfig, McpTransport};

/// An engine on the SQLite file in `dir` whose clients may give threads
/// at most `ceiling`. Its model is never asked.
async fn engine(dir: &Path, ceiling: SandboxMode) -> Engine {
    let client = OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9")).expect("client");
    let store = SqliteStore::open(&dir.join("gantry.db"))
        .await
        .expect("store");
    EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(Arc::new(client))))
        .config(EngineConfig {
            max_sandbox: ceiling,
            ..EngineConfig::default()
        })
        .start()
        .await
        .expect("engine")
}

/// A job that would leave `marker` behind.
fn touching(marker: &Path) -> NewJob {
    NewJob {
        name: "touch".into(),
        schedule: "every day at 9am".into(),
        action: JobAction::Command {
            command: format!("touch {}", marker.display()),
            cwd: None,
        },
        timeout_ms: None,
    }
}

fn refused_saying_what_to_do(result: Result<impl std::fmt::Debug, EngineError>) {
    match result {
        Err(EngineError::InvalidInput(message)) => {
            assert!(
                message.contains("outside the sandbox")
                    && message.contains("--max-sandbox danger-full-access"),
                "the refusal says why and what to do: {message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn an_mcp_stdio_server_from_a_client_is_refused_below_full_access() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let engine = engine(dir.path(), SandboxMode::WorkspaceWrite).await;
    let stdio = McpServerConfig::new(
        "planted",
        McpTransport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), format!("touch {}", marker.display())],
            env: Default::default(),
            cwd: None,
        },
    );
    refused_saying_what_to_do(engine.mcp().add_server(stdio).await);
    assert!(
        engine.mcp().servers().is_empty(),
        "a refused server is not kept"
    );
    engine.mcp().start_servers().await;
    assert!(!marker.exists(), "nothing was run");

    // A server over HTTP runs nothing here: taken.
    let http = McpServerConfig::new(
        "remote",
        McpTransport::Http {
            url: "http://127.0.0.1:9/mcp".into(),
            headers: Default::default(),
            bearer_token_env: None,
        },
    );
    engine.mcp().add_server(http).await.expect("an HTTP server");
    assert_eq!(engine.mcp().servers().len(), 1);
}

#[tokio::test]
async fn a_command_job_is_refused_below_full_access_and_a_stored_one_runs_no_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let engine_ = engine(dir.path(), SandboxMode::WorkspaceWrite).await;
    refused_saying_what_to_do(engine_.jobs().create(touching(&marker)).await);
    assert!(engine_.jobs().list().await.expect("jobs").is_empty());
    engine_.shutdown().await.expect("a clean stop");
    drop(engine_);

    // Made where commands were allowed, then the server was restarted with
    // a ceiling: the job is still there, but its command does not run.
    let open = engine(dir.path(), SandboxMode::DangerFullAccess).await;
    let job = open
        .jobs()
        .create(touching(&marker))
        .await
        .expect("taken at full access");
    open.shutdown().await.expect("a clean stop");
    drop(open);
    let engine_ = engine(dir.path(), SandboxMode::WorkspaceWrite).await;
    let run = engine_.jobs().run_now(&job.id).await.expect("a run");
    assert_eq!(run.status, ExecutionStatus::Failed);
    assert!(
        run.error
            .as_deref()
            .is_some_and(|e| e.contains("outside the sandbox")),
        "the run says why: {run:?}"
    );
    assert!(!marker.exists(), "the command did not run");
}
