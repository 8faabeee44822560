//! The CodeWhale service over a real engine (in-memory store) whose default
//! model is the scripted mock LLM over real HTTP.

use std::sync::Arc;
use std::time::Duration;

use gantry_core::{EngineBuilder, Providers, ProvidersConfig};
use gantry_store::MemoryStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ProviderConfig, ProviderKind};
use proto_codewhale::CodeWhale;

/// Fails a wait that would otherwise hang the test.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

pub(crate) struct Setup {
    pub cw: CodeWhale,
    // Kept alive: dropping it stops the model server.
    pub _llm: MockLlm,
    pub dir: tempfile::TempDir,
}

/// CodeWhale over an engine whose model answers `steps`, in order.
pub(crate) async fn start(steps: Vec<Step>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("workspace");
    let llm = MockLlm::start(Script::new(steps)).expect("mock llm");
    let store = Arc::new(MemoryStore::new());
    let mut mock = ProviderConfig::new("mock", ProviderKind::OpenaiChat);
    mock.base_url = Some(llm.base_url());
    mock.api_key = Some("sk-test-secret-key-123456".into());
    mock.models = vec!["test-model".into()];
    let providers = Arc::new(
        Providers::load(
            store.clone(),
            ProvidersConfig {
                providers: vec![mock],
                default_model: Some("mock/test-model".into()),
                ..ProvidersConfig::default()
            },
        )
        .await
        .expect("providers"),
    );
    let engine = EngineBuilder::new(store, providers.clone())
        .providers(providers)
        .start()
        .await
        .expect("engine");
    let ws = std::fs::canonicalize(ws).expect("workspace path");
    Setup {
        cw: CodeWhale::open(engine, ws).await.expect("codewhale"),
        _llm: llm,
        dir,
    }
}
