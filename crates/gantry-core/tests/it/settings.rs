//! Thread settings a client controls: its own thread id, its own model
//! server, sampling, and changing them on a live thread.

use crate::common;

use std::sync::Arc;

use common::{Harness, engine_with, until_turn_ends};
use gantry_core::{
    ContextMessage, ContextRole, CreateThread, EngineConfig, EngineError, IfBusy, SingleModel,
};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ModelEndpoint, ProviderKind, ThreadId, ThreadSettingsPatch, TurnStatus};

#[tokio::test]
async fn a_client_chosen_id_names_the_thread_once() {
    let h = Harness::new(vec![]).await;
    let create = |id: &str| CreateThread {
        cwd: h.workspace(),
        id: Some(ThreadId::from(id)),
        ..CreateThread::default()
    };
    let thread = h
        .engine
        .threads()
        .create(create("review:42"))
        .await
        .unwrap();
    assert_eq!(thread.id.as_str(), "review:42");
    assert_eq!(
        h.engine.threads().read(&thread.id).await.unwrap().thread.id,
        thread.id
    );

    let again = h.engine.threads().create(create("review:42")).await;
    assert!(
        matches!(&again, Err(EngineError::AlreadyExists { what: "thread", name }) if name == "review:42"),
        "{again:?}"
    );
    for bad in ["", "has space", "../x", &"x".repeat(129)] {
        let result = h.engine.threads().create(create(bad)).await;
        assert!(
            matches!(&result, Err(EngineError::InvalidInput(m)) if m.contains("thread id")),
            "{bad:?}: {result:?}"
        );
    }
}

#[tokio::test]
async fn a_thread_talks_to_its_own_model_server_and_can_switch() {
    // The engine's own resolver points nowhere: only the thread's endpoint
    // can answer.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let nowhere = OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9/v1")).unwrap();
    let engine = engine_with(
        dir.path(),
        Arc::new(SingleModel(Arc::new(nowhere))),
        EngineConfig::default(),
    )
    .await;
    let anthropic = MockLlm::start(Script::new(vec![Step::text("from anthropic")])).unwrap();
    let openai = MockLlm::start(Script::new(vec![Step::text("from openai")])).unwrap();

    // A3S clients give the base URL without `/v1`.
    let base = anthropic.base_url().trim_end_matches("/v1").to_owned();
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().join("ws"),
            model: Some("claude-sonnet-4-5".into()),
            endpoint: Some(ModelEndpoint {
                kind: ProviderKind::Anthropic,
                base_url: Some(base),
                api_key: Some("sk-ant-test".into()),
            }),
            temperature: Some(0.3),
            max_output_tokens: Some(512),
            ..CreateThread::default()
        })
        .await
        .unwrap();
    let run = |text: &'static str| {
        let engine = engine.clone();
        let id = thread.id.clone();
        async move {
            let mut sub = engine.feeds().subscribe(&id, 1).await.unwrap();
            let turn = engine
                .turns()
                .send(&id, text, IfBusy::Reject)
                .await
                .unwrap();
            let seen = until_turn_ends(&mut sub, &turn).await;
            common::turn_status(&seen)
        }
    };
    assert_eq!(run("hello").await, TurnStatus::Completed);
    let sent = &anthropic.requests()[0];
    assert_eq!(sent.path, "/v1/messages");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.body["model"], "claude-sonnet-4-5");
    assert_eq!(sent.body["max_tokens"], 512);
    let temperature = sent.body["temperature"].as_f64().unwrap_or_default();
    assert!((temperature - 0.3).abs() < 1e-6, "{temperature}");

    // Switch the live thread to an OpenAI-compatible server (base URL with `/v1`).
    let openai_url = openai.base_url();
    let configured = engine
        .threads()
        .configure(
            &thread.id,
            ThreadSettingsPatch {
                model: Some("gpt-4.1-mini".into()),
                instructions: Some(Some("answer in French".into())),
                endpoint: Some(Some(ModelEndpoint {
                    kind: ProviderKind::OpenaiChat,
                    base_url: Some(openai_url),
                    api_key: None,
                })),
                temperature: Some(None),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(configured.model, "gpt-4.1-mini");
    assert_eq!(run("again").await, TurnStatus::Completed);
    assert_eq!(anthropic.request_count(), 1);
    let sent = &openai.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(sent.body["model"], "gpt-4.1-mini");
    assert!(sent.body.get("temperature").is_none(), "{}", sent.body);
    assert_eq!(sent.body["messages"][0]["content"], "answer in French");

    // The change is in the log, so it survives a restart.
    engine.shutdown().await.expect("events stored");
    drop(engine);
    let engine = engine_with(
        dir.path(),
        Arc::new(SingleModel(Arc::new(
            OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9/v1")).unwrap(),
        ))),
        EngineConfig::default(),
    )
    .await;
    let reloaded = engine
        .threads()
        .read(&thread.id)
        .await
        .unwrap()
        .thread
        .clone();
    assert_eq!(reloaded.settings(), configured.settings());
}

#[tokio::test]
async fn patches_from_two_clients_to_different_fields_both_stick() {
    let h = Harness::new(vec![]).await;
    // Patches as a wire carries them: absent keeps, null clears.
    let rename: ThreadSettingsPatch =
        serde_json::from_str(r#"{"name":"renamed","metadata":{"owner":"ada"}}"#).unwrap();
    let tune: ThreadSettingsPatch =
        serde_json::from_str(r#"{"temperature":0.2,"metadata":{"team":"core"}}"#).unwrap();
    let threads = h.engine.threads();
    let (a, b) = tokio::join!(
        threads.configure(&h.thread.id, rename),
        threads.configure(&h.thread.id, tune)
    );
    a.unwrap();
    b.unwrap();
    let thread = threads.read(&h.thread.id).await.unwrap().thread.clone();
    assert_eq!(thread.name.as_deref(), Some("renamed"));
    assert_eq!(thread.temperature, Some(0.2));
    assert_eq!(
        thread.metadata.get("owner").map(String::as_str),
        Some("ada")
    );
    assert_eq!(
        thread.metadata.get("team").map(String::as_str),
        Some("core")
    );

    let clear: ThreadSettingsPatch =
        serde_json::from_str(r#"{"temperature":null,"metadata":{"owner":null}}"#).unwrap();
    let thread = threads.configure(&h.thread.id, clear).await.unwrap();
    assert_eq!(thread.temperature, None);
    assert_eq!(thread.name.as_deref(), Some("renamed"), "absent keeps");
    assert!(!thread.metadata.contains_key("owner"));
    assert!(thread.metadata.contains_key("team"));
}

#[tokio::test]
async fn bad_settings_and_archived_threads_are_refused() {
    let h = Harness::new(vec![]).await;
    let result = h
        .engine
        .threads()
        .configure(
            &h.thread.id,
            ThreadSettingsPatch {
                temperature: Some(Some(3.5)),
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(&result, Err(EngineError::InvalidInput(m)) if m.contains("temperature")),
        "{result:?}"
    );
    let result = h
        .engine
        .threads()
        .configure(
            &h.thread.id,
            ThreadSettingsPatch {
                model: Some(" ".into()),
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(result, Err(EngineError::InvalidInput(_))),
        "{result:?}"
    );
    let unchanged = h
        .engine
        .threads()
        .read(&h.thread.id)
        .await
        .unwrap()
        .thread
        .clone();
    assert_eq!(unchanged.settings(), h.thread.settings());
    h.engine.threads().archive(&h.thread.id).await.unwrap();
    let result = h
        .engine
        .threads()
        .configure(
            &h.thread.id,
            ThreadSettingsPatch {
                name: Some(Some("late".into())),
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(result, Err(EngineError::Archived(_))),
        "{result:?}"
    );
    let unknown = h
        .engine
        .threads()
        .configure(&ThreadId::from("nope"), ThreadSettingsPatch::default())
        .await;
    assert!(
        matches!(unknown, Err(EngineError::ThreadNotFound(_))),
        "{unknown:?}"
    );
}

#[tokio::test]
async fn a_thread_starts_with_the_given_conversation_and_metadata() {
    let h = Harness::new(vec![Step::text("You are Ada.")]).await;
    let thread = h
        .engine
        .threads()
        .create(CreateThread {
            cwd: h.workspace(),
            model: Some("test-model".into()),
            metadata: [("client".to_owned(), "a3s".to_owned())].into(),
            context: vec![
                ContextMessage {
                    role: ContextRole::User,
                    text: "my name is Ada".into(),
                },
                ContextMessage {
                    role: ContextRole::Assistant,
                    text: "Hello Ada".into(),
                },
                ContextMessage {
                    role: ContextRole::Assistant,
                    text: "How can I help?".into(),
                },
            ],
            ..CreateThread::default()
        })
        .await
        .unwrap();
    assert_eq!(thread.metadata["client"], "a3s");
    let mut sub = h.engine.feeds().subscribe(&thread.id, 1).await.unwrap();
    let turn = h
        .engine
        .turns()
        .send(&thread.id, "who am I?", IfBusy::Reject)
        .await
        .unwrap();
    until_turn_ends(&mut sub, &turn).await;
    let messages = h.llm.requests()[0].body["messages"].clone();
    let said: Vec<(String, String)> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .filter(|(role, _)| role != "system")
        .collect();
    let expected = [
        ("user", "my name is Ada"),
        ("assistant", "Hello Ada"),
        ("assistant", "How can I help?"),
        ("user", "who am I?"),
    ];
    assert_eq!(
        said,
        expected.map(|(r, t)| (r.to_owned(), t.to_owned())).to_vec()
    );
}

#[tokio::test]
async fn commands_run_with_the_environment_a_client_set() {
    let h = Harness::new(vec![
        Step::tool_call(
            "shell",
            serde_json::json!({"command": "echo \"greeting=$GANTRY_GREETING\""}),
        ),
        Step::text("done"),
    ])
    .await;
    let bad = h
        .engine
        .set_command_env([("A=B".to_owned(), "x".to_owned())].into());
    assert!(matches!(bad, Err(EngineError::InvalidInput(_))), "{bad:?}");
    h.engine
        .set_command_env([("GANTRY_GREETING".to_owned(), "bonjour".to_owned())].into())
        .unwrap();
    h.run_turn("greet").await;
    let told = common::last_tool_result(&h.llm, 1);
    assert!(told.contains("greeting=bonjour"), "{told}");
}

#[tokio::test]
async fn a_thread_moves_to_another_workspace_with_its_skills_and_stays_there() {
    let h = Harness::new(vec![
        Step::tool_call("shell", serde_json::json!({"command": "pwd"})),
        Step::text("done"),
    ])
    .await;
    let other = h.dir.path().join("other");
    let skill = other.join(".gantry/skills/release");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: release\ndescription: Cut a release\n---\nTag it.\n",
    )
    .unwrap();
    let configure = |cwd: &std::path::Path| {
        h.engine.threads().configure(
            &h.thread.id,
            ThreadSettingsPatch {
                cwd: Some(cwd.to_string_lossy().into_owned()),
                ..Default::default()
            },
        )
    };
    let missing = configure(&h.dir.path().join("missing")).await;
    assert!(
        matches!(&missing, Err(EngineError::InvalidInput(m)) if m.contains("not an existing directory")),
        "{missing:?}"
    );
    let canonical = other.canonicalize().unwrap();
    let moved = configure(&other).await.unwrap();
    assert_eq!(moved.cwd, canonical.to_string_lossy());
    let skills = h.engine.skills().list(&h.thread.id).await.unwrap();
    assert!(skills.iter().any(|s| s.name == "release"), "{skills:?}");

    h.run_turn("where are you?").await;
    let told = common::last_tool_result(&h.llm, 1);
    assert!(told.contains(&*canonical.to_string_lossy()), "{told}");

    // Recorded in the log: the thread is still there after a restart.
    h.engine.shutdown().await.expect("events stored");
    let engine = common::engine_at(h.dir.path(), &h.llm, EngineConfig::default()).await;
    let reloaded = engine.threads().read(&h.thread.id).await.unwrap();
    assert_eq!(reloaded.thread.cwd, canonical.to_string_lossy());
}
