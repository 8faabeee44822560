//! Variables a host mints for one command reach that command only, and are
//! recorded nowhere.

use crate::common;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use gantry_core::{CommandEnvSource, CreateThread, EngineBuilder, IfBusy, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_store::{SqliteStore, Store};
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ItemKind, ThreadId};
use serde_json::json;

/// Hands a token to `git` commands, and remembers what it was asked.
#[derive(Default)]
struct GitToken {
    asked: Mutex<Vec<(ThreadId, String)>>,
}

#[async_trait]
impl CommandEnvSource for GitToken {
    async fn env_for(&self, thread: &ThreadId, command: &str) -> Vec<(String, String)> {
        self.asked
            .lock()
            .unwrap()
            .push((thread.clone(), command.to_owned()));
        if command.split_whitespace().any(|w| w == "git") {
            vec![("GH_TOKEN".into(), "ghs_secret".into())]
        } else {
            Vec::new()
        }
    }
}

#[tokio::test]
async fn a_minted_variable_reaches_its_command_and_is_not_stored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call("shell", json!({"command": "echo plain=$GH_TOKEN"})),
        Step::tool_call(
            "shell",
            json!({"command": "git --version >/dev/null; echo token-length=${#GH_TOKEN}"}),
        ),
        Step::text("done"),
    ]))
    .unwrap();
    let mut config = ClientConfig::new(llm.base_url());
    config.retry = fast_retries();
    let models = Arc::new(SingleModel(Arc::new(
        OpenAiChatClient::new(config).unwrap(),
    )));
    let source = Arc::new(GitToken::default());
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("gantry.db"))
            .await
            .unwrap(),
    );
    let engine = EngineBuilder::new(store.clone(), models)
        .command_env_source(source.clone())
        .start()
        .await
        .unwrap();
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().join("ws"),
            ..CreateThread::default()
        })
        .await
        .unwrap()
        .id;
    let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
    let turn = engine
        .turns()
        .send(&thread, "push it", IfBusy::Reject)
        .await
        .unwrap();
    until_turn_ends(&mut sub, &turn).await;

    let view = engine.threads().read(&thread).await.unwrap();
    let outputs: Vec<String> = view.turns[0]
        .items
        .iter()
        .filter_map(|i| match &i.kind {
            // The last line: a login shell's profile may talk first.
            ItemKind::CommandExecution { output, .. } => {
                Some(output.trim().lines().last().unwrap_or_default().to_owned())
            }
            _ => None,
        })
        .collect();
    assert_eq!(outputs, ["plain=", "token-length=10"]);
    let asked = source.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "asked once per command");
    assert!(asked.iter().all(|(t, _)| t == &thread));

    engine.flush().await.expect("events stored");
    let log = serde_json::to_string(&store.events(&thread, 1).await.unwrap()).unwrap();
    assert!(!log.contains("ghs_secret"), "the token is not in the log");
}
