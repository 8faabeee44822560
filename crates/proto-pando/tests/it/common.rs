//! An engine whose model is the scripted mock LLM, served as a Pando
//! instance on its derived ports with a registry of its own, and a
//! DEALER + SUB client.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use gantry_core::{Engine, EngineBuilder, Providers, ProvidersConfig};
use gantry_store::MemoryStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::{ProviderConfig, ProviderKind};
use proto_pando::{InstanceOptions, PandoInstance};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use zeromq::{DealerSocket, Socket, SocketRecv, SocketSend, SubSocket, ZmqMessage};

/// Fails a wait that would otherwise hang the test.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(30);

pub(crate) struct Setup {
    pub engine: Engine,
    pub instance: Option<PandoInstance>,
    pub stop: CancellationToken,
    pub ws: std::path::PathBuf,
    pub registry: std::path::PathBuf,
    // Kept alive: dropping it stops the model server.
    pub _llm: MockLlm,
    pub _dir: tempfile::TempDir,
}

/// An engine whose model answers `steps`, in order.
pub(crate) async fn engine(steps: Vec<Step>) -> (Engine, MockLlm) {
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
    (engine, llm)
}

/// A Pando instance over an engine whose model answers `steps`.
pub(crate) async fn start(steps: Vec<Step>) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("workspace");
    let registry = dir.path().join("registry");
    let (engine, llm) = engine(steps).await;
    let stop = CancellationToken::new();
    let options = InstanceOptions {
        registry_dir: registry.clone(),
        heartbeat: Duration::from_millis(100),
        ..InstanceOptions::new(&ws)
    };
    let instance = PandoInstance::start(engine.clone(), options, stop.clone())
        .await
        .expect("instance");
    Setup {
        engine,
        instance: Some(instance),
        stop,
        ws,
        registry,
        _llm: llm,
        _dir: dir,
    }
}

impl Setup {
    pub(crate) fn ports(&self) -> (u16, u16) {
        let entry = self.instance.as_ref().expect("running").entry();
        (entry.lock.rpc_port, entry.lock.pub_port)
    }

    /// A DEALER and a SUB (subscribed to everything, and hearing).
    pub(crate) async fn client(&self) -> Client {
        let (rpc, publ) = self.ports();
        let mut dealer = DealerSocket::new();
        dealer
            .connect(&format!("tcp://127.0.0.1:{rpc}"))
            .await
            .expect("connect DEALER");
        let mut sub = SubSocket::new();
        sub.connect(&format!("tcp://127.0.0.1:{publ}"))
            .await
            .expect("connect SUB");
        sub.subscribe("").await.expect("subscribe");
        let mut client = Client {
            dealer,
            sub,
            next: 0,
        };
        // Subscribed once the first heartbeat arrives.
        client.topic("instance.heartbeat").await;
        client
    }
}

pub(crate) struct Client {
    dealer: DealerSocket,
    sub: SubSocket,
    next: u64,
}

impl Client {
    /// Sends `body` as `[empty, json]`; the reply's JSON.
    pub(crate) async fn raw(&mut self, body: &str) -> Value {
        let msg =
            ZmqMessage::try_from(vec![Bytes::new(), Bytes::from(body.to_owned())]).expect("frames");
        self.dealer.send(msg).await.expect("send");
        let reply = tokio::time::timeout(HANG_GUARD, self.dealer.recv())
            .await
            .expect("a reply in time")
            .expect("recv");
        let frames = reply.into_vec();
        assert_eq!(frames.len(), 2, "the reply is [empty, json]");
        assert!(frames[0].is_empty());
        serde_json::from_slice(&frames[1]).expect("reply JSON")
    }

    /// Calls `method`; the whole reply.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = format!("r{}", self.next);
        let mut req = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            req["params"] = params;
        }
        let reply = self.raw(&req.to_string()).await;
        assert_eq!(reply["id"], id.as_str());
        reply
    }

    /// Calls `method`; its result, which must not be an error.
    pub(crate) async fn result(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call(method, params).await;
        assert!(reply.get("error").is_none(), "{reply}");
        reply["result"].clone()
    }

    /// The next PUB message: (topic, envelope).
    pub(crate) async fn next_topic(&mut self) -> (String, Value) {
        let msg = tokio::time::timeout(HANG_GUARD, self.sub.recv())
            .await
            .expect("a topic in time")
            .expect("recv");
        let frames = msg.into_vec();
        assert_eq!(frames.len(), 1, "one frame per message");
        let nul = frames[0]
            .iter()
            .position(|b| *b == 0)
            .expect("topic NUL envelope");
        let topic = String::from_utf8(frames[0][..nul].to_vec()).expect("topic");
        let envelope: Value = serde_json::from_slice(&frames[0][nul + 1..]).expect("envelope");
        assert_eq!(envelope["topic"], topic.as_str());
        (topic, envelope)
    }

    /// Envelopes up to and including the first on `topic`, heartbeats left out.
    pub(crate) async fn until(&mut self, topic: &str) -> Vec<(String, Value)> {
        let mut seen = Vec::new();
        loop {
            let (t, env) = self.next_topic().await;
            let done = t == topic;
            if done || t != "instance.heartbeat" {
                seen.push((t, env));
            }
            if done {
                return seen;
            }
        }
    }

    /// The payload of the first message on `topic`.
    pub(crate) async fn topic(&mut self, topic: &str) -> Value {
        let (_, env) = self.until(topic).await.pop().expect("one");
        env["payload"].clone()
    }
}
