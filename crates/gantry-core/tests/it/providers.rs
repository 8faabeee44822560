//! The provider registry through the engine API: CRUD, masking, persistence
//! across a restart on the same SQLite file, resolution errors, and a turn's
//! cost from the catalog against the scripted model server.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::{fast_retries, until_turn_ends};
use futures_util::StreamExt;
use gantry_core::{
    CreateThread, Engine, EngineBuilder, EngineError, IfBusy, ModelResolver, Providers,
    ProvidersConfig, SingleModel,
};
use gantry_llm::{ModelEvent, ModelRequest};
use gantry_store::{SqliteStore, Store};
use gantry_testkit::{MockLlm, Script, Step, UsageSpec};
use gantry_types::{ProviderConfig, ProviderKind};
use serde_json::json;

const KEY: &str = "sk-test-0123456789abcdef";

async fn engine(dir: &Path, config: ProvidersConfig) -> (Engine, Arc<Providers>) {
    let store = Arc::new(SqliteStore::open(&dir.join("gantry.db")).await.unwrap());
    let providers = Arc::new(Providers::load(store.clone(), config).await.unwrap());
    // The resolver given here is replaced by the registry.
    let placeholder = Arc::new(SingleModel(Arc::new(
        gantry_llm::openai_chat::OpenAiChatClient::new(gantry_llm::ClientConfig::new(
            "http://127.0.0.1:9",
        ))
        .unwrap(),
    )));
    let engine = EngineBuilder::new(store, placeholder)
        .providers(providers.clone())
        .start()
        .await
        .unwrap();
    (engine, providers)
}

fn mock_provider(name: &str, llm: &MockLlm) -> ProviderConfig {
    let mut p = ProviderConfig::new(name, ProviderKind::OpenaiChat);
    p.base_url = Some(llm.base_url());
    p.api_key = Some(KEY.into());
    p
}

#[tokio::test]
async fn crud_masks_keys_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut from_file = ProviderConfig::new("anthropic", ProviderKind::Anthropic);
    from_file.api_key_env = Some("GANTRY_TEST_NO_SUCH_VAR".into());
    let config = ProvidersConfig {
        providers: vec![from_file.clone()],
        default_model: Some("anthropic/claude-sonnet-4-5".into()),
        ..ProvidersConfig::default()
    };
    {
        let (engine, _) = engine(dir.path(), config.clone()).await;
        assert_eq!(
            engine.providers().default_model(),
            "anthropic/claude-sonnet-4-5"
        );

        let mut local = ProviderConfig::new("local", ProviderKind::OpenaiChat);
        local.base_url = Some("http://127.0.0.1:9/v1".into());
        local.api_key = Some(KEY.into());
        local.models = vec!["qwen3-coder".into()];
        let added = engine.providers().add(local.clone()).await.unwrap();
        assert_eq!(added.api_key.as_deref(), Some("sk-...cdef"));

        // Every listing masks; env var names are shown as they are.
        let listed = engine.providers().list();
        assert_eq!(
            listed.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
            ["anthropic", "local"]
        );
        assert!(!format!("{listed:?}").contains("0123456789"));
        assert_eq!(
            engine
                .providers()
                .get("anthropic")
                .unwrap()
                .api_key_env
                .as_deref(),
            Some("GANTRY_TEST_NO_SUCH_VAR")
        );

        // Errors: duplicate, unknown, config-defined, invalid.
        let dup = engine.providers().add(local.clone()).await.unwrap_err();
        assert!(matches!(dup, EngineError::InvalidInput(_)), "{dup}");
        let missing = engine.providers().get("nope").unwrap_err();
        assert_eq!(missing.to_string(), "provider `nope` not found");
        assert!(matches!(
            engine.providers().remove("nope").await,
            Err(EngineError::NotFound { .. })
        ));
        let err = engine.providers().remove("anthropic").await.unwrap_err();
        assert!(err.to_string().contains("configuration file"), "{err}");
        let mut bad = ProviderConfig::new("bad/name", ProviderKind::OpenaiChat);
        bad.base_url = Some("ftp://x".into());
        assert!(matches!(
            engine.providers().add(bad).await,
            Err(EngineError::InvalidInput(_))
        ));

        // Updating with the masked key from a listing keeps the real key.
        let mut changed = engine.providers().get("local").unwrap();
        changed.headers.insert("x-team".into(), "gantry".into());
        engine.providers().update(changed).await.unwrap();

        let mut extra = ProviderConfig::new("extra", ProviderKind::OpenaiResponses);
        extra.api_key_env = Some("EXTRA_KEY".into());
        engine.providers().add(extra).await.unwrap();
        engine.providers().remove("extra").await.unwrap();

        engine
            .providers()
            .set_default_model("local/qwen3-coder")
            .await
            .unwrap();
        let err = engine
            .providers()
            .set_default_model("nope/x")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("unknown provider `nope`"), "{err}");
        engine.shutdown().await.expect("events stored");
    }

    // A new engine on the same file sees what the old one changed.
    let (engine, providers) = engine(dir.path(), config).await;
    assert_eq!(engine.providers().default_model(), "local/qwen3-coder");
    let names: Vec<String> = engine
        .providers()
        .list()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["anthropic", "local"]);
    let local = engine.providers().get("local").unwrap();
    assert_eq!(
        local.headers.get("x-team").map(String::as_str),
        Some("gantry")
    );
    assert_eq!(local.api_key.as_deref(), Some("sk-...cdef"));
    assert!(providers.resolve("local/qwen3-coder").is_ok());
    // The store holds the real key (not its mask) of the API-added provider,
    // and nothing of the provider from the file (its key lives in the env).
    let raw = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .unwrap();
    let stored = raw.providers().await.unwrap();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored[0].api_key.as_deref(), Some(KEY));
}

#[tokio::test]
async fn resolution_rules_and_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![])).unwrap();
    let mut anthropic = ProviderConfig::new("claude", ProviderKind::Anthropic);
    anthropic.api_key_env = Some("GANTRY_TEST_NO_SUCH_VAR".into());
    let mut local = mock_provider("local", &llm);
    local.models = vec!["qwen3-coder".into()];
    let config = ProvidersConfig {
        providers: vec![anthropic, local],
        default_model: Some("local/qwen3-coder".into()),
        ..ProvidersConfig::default()
    };
    let (_engine, p) = engine(dir.path(), config).await;

    let route = |m: &str| p.route_of(m).map(|(p, id)| (p.name, id));
    assert_eq!(
        route("local/gpt-4.1"),
        Ok(("local".into(), "gpt-4.1".into()))
    );
    assert_eq!(
        route("qwen3-coder"),
        Ok(("local".into(), "qwen3-coder".into()))
    );
    // The catalog says Anthropic: the provider of that kind.
    assert_eq!(
        route("claude-haiku-4-5"),
        Ok(("claude".into(), "claude-haiku-4-5".into()))
    );
    // Unknown to everyone: the default model's provider.
    assert_eq!(route("mystery"), Ok(("local".into(), "mystery".into())));
    // An id with a slash whose prefix is no provider is a plain id (OpenRouter style).
    assert_eq!(
        route("qwen/qwen3"),
        Ok(("local".into(), "qwen/qwen3".into()))
    );

    let err = p.resolve("claude/claude-sonnet-4-5").err().unwrap();
    assert_eq!(
        err,
        "provider `claude` needs an API key: set the environment variable GANTRY_TEST_NO_SUCH_VAR"
    );
    assert_eq!(err.lines().count(), 1);

    // Without a default, nothing serves an unknown model.
    let dir2 = tempfile::tempdir().unwrap();
    let (_e2, p2) = engine(
        dir2.path(),
        ProvidersConfig {
            providers: vec![mock_provider("local", &llm)],
            ..ProvidersConfig::default()
        },
    )
    .await;
    let err = p2.resolve("mystery").err().unwrap();
    assert!(
        err.contains("no provider serves model `mystery`") && err.contains("local"),
        "{err}"
    );
    let err = p2.resolve("nope/m").err().unwrap();
    assert!(err.starts_with("unknown provider `nope`"), "{err}");

    // A bad catalog override or provider is one line at load time.
    let store = Arc::new(gantry_store::MemoryStore::new());
    let bad = ProvidersConfig {
        models: [("m".to_owned(), json!({"limit": {"context": "big"}}))].into(),
        ..ProvidersConfig::default()
    };
    let err = Providers::load(store, bad).await.unwrap_err();
    assert!(err.to_string().starts_with("model `m`"), "{err}");
}

#[tokio::test]
async fn reasoning_only_reaches_models_that_take_it() {
    let dir = tempfile::tempdir().unwrap();
    let llm = MockLlm::start(Script::new(vec![Step::text("a"), Step::text("b")])).unwrap();
    let config = ProvidersConfig {
        providers: vec![mock_provider("mock", &llm)],
        retry: fast_retries(),
        ..ProvidersConfig::default()
    };
    let (_engine, p) = engine(dir.path(), config).await;
    assert_eq!(
        p.reasoning_for("mock/o4-mini", Some("high")).as_deref(),
        Some("high")
    );
    assert_eq!(p.reasoning_for("mock/gpt-4.1", Some("high")), None);
    assert_eq!(p.reasoning_for("mock/unknown", Some("high")), None);

    for model in ["mock/o4-mini", "mock/gpt-4.1"] {
        let client = p.resolve(model).unwrap();
        let mut stream = client.stream(ModelRequest {
            model: model.into(),
            reasoning: Some("high".into()),
            ..ModelRequest::default()
        });
        while let Some(ev) = stream.next().await {
            if matches!(ev.unwrap(), ModelEvent::Finished { .. }) {
                break;
            }
        }
    }
    let requests = llm.requests();
    assert_eq!(requests[0].body["model"], "o4-mini");
    assert_eq!(requests[0].body["reasoning_effort"], "high");
    assert_eq!(requests[1].body["model"], "gpt-4.1");
    assert!(requests[1].body.get("reasoning_effort").is_none());
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn a_turn_records_its_cost_from_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let usage = UsageSpec {
        prompt_tokens: 100_000,
        completion_tokens: 10_000,
        cached_tokens: 40_000,
        reasoning_tokens: 0,
        ..UsageSpec::default()
    };
    let llm = MockLlm::start(Script::new(vec![Step::text("done").with_usage(usage)])).unwrap();
    let config = ProvidersConfig {
        providers: vec![mock_provider("mock", &llm)],
        retry: fast_retries(),
        ..ProvidersConfig::default()
    };
    let (engine, _) = engine(dir.path(), config).await;
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().join("ws"),
            model: Some("mock/gpt-4.1".into()),
            ..CreateThread::default()
        })
        .await
        .unwrap();
    let mut sub = engine.feeds().subscribe(&thread.id, 1).await.unwrap();
    let turn = engine
        .turns()
        .send(&thread.id, "hi", IfBusy::Reject)
        .await
        .unwrap();
    until_turn_ends(&mut sub, &turn).await;
    let view = engine.threads().read(&thread.id).await.unwrap();
    // gpt-4.1: $2 in, $0.50 cached in, $8 out per million.
    let expected = (60_000.0 * 2.0 + 40_000.0 * 0.5 + 10_000.0 * 8.0) / 1e6;
    let cost = view.turns[0].turn.cost_usd;
    assert!((cost - expected).abs() < 1e-9, "{cost} != {expected}");
    assert!((view.thread.cost_usd - expected).abs() < 1e-9);
    assert_eq!(llm.requests()[0].body["model"], "gpt-4.1");
}

#[tokio::test]
async fn a_threads_reasoning_effort_comes_from_its_agent_then_itself() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let llm = MockLlm::start(Script::new(vec![
        Step::text("a"),
        Step::text("b"),
        Step::text("c"),
    ]))
    .unwrap();
    let config = ProvidersConfig {
        providers: vec![mock_provider("mock", &llm)],
        retry: fast_retries(),
        ..ProvidersConfig::default()
    };
    let (engine, _) = engine(dir.path(), config).await;
    engine
        .agents()
        .save(gantry_core::AgentSpec {
            id: Some("planner".into()),
            reasoning: Some("low".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let create = |reasoning: Option<&str>| CreateThread {
        cwd: dir.path().join("ws"),
        model: Some("mock/o4-mini".into()),
        agent: Some("planner".into()),
        reasoning: reasoning.map(str::to_owned),
        ..CreateThread::default()
    };
    let from_agent = engine.threads().create(create(None)).await.unwrap();
    let own = engine
        .threads()
        .create(create(Some("medium")))
        .await
        .unwrap();
    assert_eq!(from_agent.reasoning.as_deref(), Some("low"));
    assert_eq!(own.reasoning.as_deref(), Some("medium"));

    let run = |thread: gantry_types::ThreadId| {
        let engine = engine.clone();
        async move {
            let mut sub = engine.feeds().subscribe(&thread, 1).await.unwrap();
            let turn = engine
                .turns()
                .send(&thread, "go", IfBusy::Queue)
                .await
                .unwrap();
            until_turn_ends(&mut sub, &turn).await;
        }
    };
    run(from_agent.id.clone()).await;
    run(own.id.clone()).await;
    engine
        .threads()
        .configure(
            &own.id,
            gantry_types::ThreadSettingsPatch {
                reasoning: Some(Some("high".into())),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    run(own.id.clone()).await;
    let efforts: Vec<_> = llm
        .requests()
        .iter()
        .map(|r| r.body["reasoning_effort"].clone())
        .collect();
    assert_eq!(efforts, [json!("low"), json!("medium"), json!("high")]);
}
