//! Keys and the agent: API keys are sealed in the database and its WAL yet
//! still reach the model server, across a restart; the data dir is closed
//! to sandboxed commands.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use gantry_core::{CreateThread, EngineBuilder, EngineConfig, IfBusy, Providers, ProvidersConfig};
use gantry_store::{SqliteStore, Store};
use gantry_testkit::{MockLlm, Script, Step};
use gantry_tools::SandboxSupport;
use gantry_types::{ItemKind, ModelEndpoint, ProviderConfig, ProviderKind, ThreadPolicy};
use serde_json::json;

const THREAD_KEY: &str = "sk-test-SECRET123";
const PROVIDER_KEY: &str = "sk-prov-SECRET456";

async fn start(dir: &Path) -> (gantry_core::Engine, Arc<SqliteStore>) {
    let store = Arc::new(SqliteStore::open(&dir.join("gantry.db")).await.unwrap());
    let providers = Arc::new(
        Providers::load(store.clone(), ProvidersConfig::default())
            .await
            .unwrap(),
    );
    let config = EngineConfig {
        data_dir: Some(dir.to_path_buf()),
        ..EngineConfig::default()
    };
    let engine = EngineBuilder::new(store.clone(), providers.clone())
        .providers(providers)
        .config(config)
        .start()
        .await
        .unwrap();
    (engine, store)
}

/// Fails if a key is anywhere in the database's files.
fn assert_no_key_on_disk(dir: &Path, when: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("gantry.db") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for key in [THREAD_KEY, PROVIDER_KEY] {
            assert!(
                !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
                "{when}: {key} is in {name}"
            );
        }
    }
}

/// Fails if the key is in any event of `thread` as a client is sent it:
/// serialized, from the log and from the live feed.
async fn assert_no_key_in_events(
    engine: &gantry_core::Engine,
    store: &dyn Store,
    thread: &gantry_types::ThreadId,
    when: &str,
) {
    let stored = store.events(thread, 1).await.unwrap();
    assert!(!stored.is_empty());
    let mut feed = engine.feeds().subscribe(thread, 1).await.unwrap();
    let mut json = serde_json::to_string(&stored).unwrap();
    let mut replayed = 0;
    while replayed < stored.len() {
        let note = tokio::time::timeout(std::time::Duration::from_secs(10), feed.next())
            .await
            .expect("the feed replays the log");
        if let Some(gantry_core::Notification::Event(event)) = note {
            json.push_str(&serde_json::to_string(&*event).unwrap());
            replayed += 1;
        }
    }
    json.push_str(&serde_json::to_string(&*engine.threads().read(thread).await.unwrap()).unwrap());
    assert!(!json.contains(THREAD_KEY), "{when}: the key is in {json}");
}

async fn turn(engine: &gantry_core::Engine, thread: &gantry_types::ThreadId, text: &str) {
    let mut sub = engine.feeds().subscribe(thread, 1).await.unwrap();
    let turn = engine
        .turns()
        .send(thread, text, IfBusy::Reject)
        .await
        .unwrap();
    until_turn_ends(&mut sub, &turn).await;
}

#[tokio::test]
async fn keys_are_sealed_at_rest_and_still_used_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let llm = MockLlm::start(Script::new(vec![Step::text("one"), Step::text("two")])).unwrap();

    let (engine, store) = start(dir.path()).await;
    let mut provider = ProviderConfig::new("p", ProviderKind::OpenaiChat);
    provider.base_url = Some(llm.base_url());
    provider.api_key = Some(PROVIDER_KEY.into());
    engine.providers().add(provider).await.unwrap();
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().join("ws"),
            model: Some("m".into()),
            endpoint: Some(ModelEndpoint {
                kind: ProviderKind::OpenaiChat,
                base_url: Some(llm.base_url()),
                api_key: Some(THREAD_KEY.into()),
            }),
            ..CreateThread::default()
        })
        .await
        .unwrap()
        .id;
    turn(&engine, &thread, "hello").await;
    let bearer = format!("Bearer {THREAD_KEY}");
    assert_eq!(llm.requests()[0].header("authorization"), Some(&*bearer));
    engine.flush().await.unwrap();
    assert_no_key_on_disk(dir.path(), "with the WAL open");
    // The key is kept beside the thread, never in what a client reads.
    assert_eq!(
        store.thread_key(&thread).await.unwrap().as_deref(),
        Some(THREAD_KEY)
    );
    assert_no_key_in_events(&engine, &*store, &thread, "live").await;
    let providers = store.providers().await.unwrap();
    assert_eq!(providers[0].api_key.as_deref(), Some(PROVIDER_KEY));

    engine.shutdown().await.unwrap();
    drop(engine);
    store.close().await;
    assert_no_key_on_disk(dir.path(), "after a checkpoint");
    drop(store);

    let (engine, store) = start(dir.path()).await;
    turn(&engine, &thread, "again").await;
    assert_eq!(llm.requests()[1].header("authorization"), Some(&*bearer));
    assert_no_key_in_events(&engine, &*store, &thread, "after a restart").await;

    // A fork keeps using the key; a deleted thread leaves it behind nowhere.
    let fork = engine.threads().fork(&thread, None).await.unwrap().id;
    engine.threads().delete(&thread).await.unwrap();
    assert_eq!(store.thread_key(&thread).await.unwrap(), None);
    assert_eq!(
        store.thread_key(&fork).await.unwrap().as_deref(),
        Some(THREAD_KEY)
    );
    assert_eq!(
        engine.providers().get("p").unwrap().api_key.as_deref(),
        Some("sk-...T456"),
        "shown masked, so the full key is still there"
    );
}

#[tokio::test]
async fn sandboxed_commands_cannot_read_the_data_dir() {
    if let Some(reason) = SandboxSupport::probe().problem {
        eprintln!("SKIPPED: the sandbox cannot be enforced on this machine: {reason}");
        return;
    }
    // Outside the temp dir, a writable root the data dir must not be in.
    let dir = gantry_testkit::process::dir_outside_temp().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let db = dir.path().join("gantry.db");
    let llm = MockLlm::start(Script::new(vec![
        Step::tool_call(
            "shell",
            json!({"command": format!("cat '{}' '{}'", db.display(), dir.path().join("secret.key").display())}),
        ),
        Step::text("done"),
    ]))
    .unwrap();
    let (engine, _store) = start(dir.path()).await;
    let policy = ThreadPolicy {
        sandbox: gantry_types::SandboxMode::WorkspaceWrite,
        ..ThreadPolicy::default()
    };
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().join("ws"),
            model: Some("m".into()),
            policy,
            endpoint: Some(ModelEndpoint {
                kind: ProviderKind::OpenaiChat,
                base_url: Some(llm.base_url()),
                api_key: Some(THREAD_KEY.into()),
            }),
            ..CreateThread::default()
        })
        .await
        .unwrap()
        .id;
    turn(&engine, &thread, "read the db").await;
    let view = engine.threads().read(&thread).await.unwrap();
    let output = view.turns[0]
        .items
        .iter()
        .find_map(|i| match &i.kind {
            ItemKind::CommandExecution { output, .. } => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        output.contains(&format!("{}: Permission denied", db.display())),
        "{output}"
    );
    assert!(output.contains("secret.key: Permission denied"), "{output}");
    assert!(!output.contains("SQLite format"), "{output}");
}

#[tokio::test]
async fn creating_a_thread_with_a_taken_id_leaves_that_threads_key_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let (engine, store) = start(dir.path()).await;
    let with_key = |key: &str| CreateThread {
        id: Some("mine".into()),
        cwd: dir.path().join("ws"),
        model: Some("m".into()),
        endpoint: Some(ModelEndpoint {
            kind: ProviderKind::OpenaiChat,
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key: Some(key.into()),
        }),
        ..CreateThread::default()
    };
    let id = engine
        .threads()
        .create(with_key(THREAD_KEY))
        .await
        .unwrap()
        .id;
    let again = engine.threads().create(with_key("sk-someone-else")).await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(
        store.thread_key(&id).await.unwrap().as_deref(),
        Some(THREAD_KEY)
    );
}
