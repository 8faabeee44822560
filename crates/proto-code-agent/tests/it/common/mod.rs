//! A real CodeAgentService on an ephemeral port over a real engine (SQLite
//! file in a temp dir), whose default model is the scripted mock LLM server,
//! and a tonic client connected to it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use gantry_core::{Engine, EngineBuilder, EngineConfig, Providers, ProvidersConfig, SingleModel};
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{ClientConfig, RetryPolicy};
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ProviderConfig, ProviderKind};
use proto_code_agent::pb;
use proto_code_agent::pb::agent_event::EventType;
use proto_code_agent::pb::code_agent_service_client::CodeAgentServiceClient;
use proto_code_agent::{ServeOptions, serve};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::codec::Streaming;
use tonic::transport::Channel;

/// Fails a test that waits for something that never comes, instead of hanging.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

/// The name of the provider the engine has configured for the mock.
pub(crate) const PROVIDER: &str = "mock";

pub(crate) struct Server {
    pub client: CodeAgentServiceClient<Channel>,
    pub engine: Engine,
    pub llm: MockLlm,
    pub dir: tempfile::TempDir,
    pub addr: std::net::SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl Server {
    /// A server whose model answers with `steps`, in order.
    pub(crate) async fn start(steps: Vec<Step>) -> Self {
        Self::launch(steps, false).await
    }

    /// [`Server::start`] with its workspace trusted by the operator (the
    /// workspace's skills grant their `allowed-tools`).
    pub(crate) async fn start_trusted(steps: Vec<Step>) -> Self {
        Self::launch(steps, true).await
    }

    async fn launch(steps: Vec<Step>, trusted: bool) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("ws")).expect("workspace");
        let llm = MockLlm::start(Script::new(steps)).expect("mock llm");
        let store = Arc::new(
            SqliteStore::open(&dir.path().join("gantry.db"))
                .await
                .expect("store"),
        );
        let mut mock = ProviderConfig::new(PROVIDER, ProviderKind::OpenaiChat);
        mock.base_url = Some(llm.base_url());
        mock.api_key = Some("test-key".into());
        mock.models = vec!["test-model".into()];
        let providers = Arc::new(
            Providers::load(
                store.clone(),
                ProvidersConfig {
                    providers: vec![mock],
                    default_model: Some(format!("{PROVIDER}/test-model")),
                    // An unreachable model server fails fast.
                    retry: RetryPolicy {
                        max_retries: 1,
                        base_delay: Duration::from_millis(1),
                        max_delay: Duration::from_millis(5),
                        ..RetryPolicy::default()
                    },
                    ..ProvidersConfig::default()
                },
            )
            .await
            .expect("providers"),
        );
        // Replaced by the registry; never asked.
        let placeholder = Arc::new(SingleModel(Arc::new(
            OpenAiChatClient::new(ClientConfig::new("http://127.0.0.1:9")).expect("client"),
        )));
        let engine = EngineBuilder::new(store, placeholder)
            .providers(providers)
            .config(EngineConfig {
                default_model: format!("{PROVIDER}/test-model"),
                data_dir: Some(dir.path().join("data")),
                trusted_workspaces: if trusted {
                    vec![dir.path().join("ws")]
                } else {
                    Vec::new()
                },
                ..EngineConfig::default()
            })
            .start()
            .await
            .expect("engine");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let options = ServeOptions {
            workspace: dir.path().join("ws"),
            auth_token: None,
            tls: None,
            grace: Duration::from_secs(1),
            exit_on_shutdown: false,
            reveal_provider_keys: false,
        };
        tokio::spawn(serve(engine.clone(), listener, options, async move {
            let _ = stopped.await;
        }));
        let client = CodeAgentServiceClient::connect(format!("http://{addr}"))
            .await
            .expect("connect");
        Self {
            client,
            engine,
            llm,
            dir,
            addr,
            stop: Some(stop),
        }
    }

    /// The server's default workspace.
    pub(crate) fn workspace(&self) -> PathBuf {
        self.dir
            .path()
            .join("ws")
            .canonicalize()
            .expect("workspace")
    }

    /// A new session on the engine's default model (the mock); its id.
    pub(crate) async fn session(&mut self) -> String {
        self.client
            .create_session(pb::CreateSessionRequest::default())
            .await
            .expect("create session")
            .into_inner()
            .session_id
    }

    /// An `LLMConfig` that reaches the mock as its own OpenAI-compatible
    /// server, the way A3S clients give it (base URL without `/v1`).
    pub(crate) fn llm_config(&self) -> pb::LlmConfig {
        pb::LlmConfig {
            provider: "openai".into(),
            model: "gpt-4.1-mini".into(),
            api_key: "sk-session".into(),
            base_url: self.llm.base_url().trim_end_matches("/v1").to_owned(),
            temperature: 0.0,
            max_tokens: 0,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Awaits `f`, failing the test after [`HANG_GUARD`].
pub(crate) async fn guard<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(HANG_GUARD, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// A generation request for the user message `text`.
pub(crate) fn ask(session: &str, text: &str) -> pb::GenerateRequest {
    pb::GenerateRequest {
        session_id: session.into(),
        messages: vec![pb::Message {
            role: "user".into(),
            content: text.into(),
            metadata: Default::default(),
        }],
    }
}

/// The model's call of `shell` running `command`.
pub(crate) fn shell(command: &str) -> Step {
    Step::tool_call("shell", serde_json::json!({ "command": command }))
}

/// Subscribes to the events of `session` (every session's when `None`) of
/// the given types (all when empty).
pub(crate) async fn subscribe(
    s: &mut Server,
    session: Option<&str>,
    types: &[&str],
) -> Streaming<pb::AgentEvent> {
    s.client
        .subscribe_events(pb::SubscribeEventsRequest {
            session_id: session.map(str::to_owned),
            event_types: types.iter().map(|t| (*t).to_owned()).collect(),
        })
        .await
        .expect("subscribe")
        .into_inner()
}

/// The next event of type `kind`, skipping others.
pub(crate) async fn next_of(
    events: &mut Streaming<pb::AgentEvent>,
    kind: EventType,
) -> pb::AgentEvent {
    guard(kind.as_str_name(), async {
        loop {
            let event = events
                .message()
                .await
                .expect("stream error")
                .expect("the stream ended");
            if event.r#type == kind as i32 {
                return event;
            }
        }
    })
    .await
}

/// Runs `Generate` on a task of its own (it may wait for the test to
/// answer an approval or an external task).
pub(crate) fn spawn_generate(
    s: &Server,
    session: &str,
    text: &str,
) -> JoinHandle<Result<pb::GenerateResponse, tonic::Status>> {
    let mut client = s.client.clone();
    let request = ask(session, text);
    tokio::spawn(async move { client.generate(request).await.map(|r| r.into_inner()) })
}
