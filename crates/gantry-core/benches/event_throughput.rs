//! Engine event throughput: notifications per second from the turn loop to a
//! subscriber, over the real SQLite store and the testkit server.
//!
//! - deltas: one answer streamed as 50 000 text deltas;
//! - events: a 200-round turn whose tool calls are refused without I/O, so the
//!   model round trips and the event path are all that is measured.
//!
//! - engine only: the same two shapes with an in-process model client that
//!   answers instantly, so the engine's own event path is what is measured.
//!
//! Run: `cargo bench -p gantry-core --bench event_throughput`.

use std::sync::Arc;
use std::time::Instant;

use futures_util::stream;
use gantry_core::{CreateThread, EngineBuilder, IfBusy, Notification, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{Message, ModelClient, ModelEvent, ModelRequest, ModelStream, ToolCall};
use gantry_store::SqliteStore;
use gantry_testkit::{MockLlm, Script, Step};
use gantry_types::EventPayload;
use serde_json::json;

/// Answers instantly: `rounds` rounds of one refused tool call, then `deltas`
/// one-character text deltas.
struct InstantModel {
    rounds: usize,
    deltas: usize,
}

impl ModelClient for InstantModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        let mut events = Vec::new();
        if done < self.rounds {
            events.push(ModelEvent::ToolCall(ToolCall {
                id: format!("call_{done}"),
                name: "no_such_tool".into(),
                arguments: "{}".into(),
            }));
        } else {
            events.extend((0..self.deltas).map(|_| ModelEvent::TextDelta("x".into())));
        }
        events.push(ModelEvent::Finished {
            finish_reason: None,
        });
        Box::pin(stream::iter(events.into_iter().map(Ok)))
    }
}

async fn measure_http(name: &str, steps: Vec<Step>) {
    let llm = MockLlm::start(Script::new(steps)).expect("mock");
    let client = OpenAiChatClient::new(ClientConfig::new(llm.base_url())).expect("client");
    measure(name, Arc::new(client)).await;
}

async fn measure(name: &str, client: Arc<dyn ModelClient>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(&dir.path().join("gantry.db"))
        .await
        .expect("store");
    let engine = EngineBuilder::new(Arc::new(store), Arc::new(SingleModel(client)))
        .config(gantry_core::EngineConfig {
            max_rounds: 10_000,
            subscriber_buffer: 1 << 18,
            ..Default::default()
        })
        .start()
        .await
        .expect("engine");
    let thread = engine
        .threads()
        .create(CreateThread {
            cwd: dir.path().to_path_buf(),
            ..Default::default()
        })
        .await
        .expect("thread");
    let mut sub = engine
        .feeds()
        .subscribe(&thread.id, thread.last_seq + 1)
        .await
        .expect("subscribe");
    let start = Instant::now();
    engine
        .turns()
        .send(&thread.id, "go", IfBusy::Reject)
        .await
        .expect("send");
    let (mut events, mut deltas) = (0u64, 0u64);
    while let Some(n) = sub.next().await {
        match n {
            Notification::Event(e) => {
                events += 1;
                if matches!(e.payload, EventPayload::TurnCompleted { .. }) {
                    break;
                }
            }
            Notification::Delta(_) => deltas += 1,
            Notification::Lagged { .. } => panic!("subscriber lagged"),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    engine.flush().await.expect("events stored");
    println!(
        "{name}: {events} events + {deltas} deltas in {:.1} ms = {:.0} notifications/s ({:.0} events/s)",
        secs * 1000.0,
        (events + deltas) as f64 / secs,
        events as f64 / secs
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let text = "x".repeat(50_000);
        measure_http("http deltas", vec![Step::text(text).with_chunk_size(1)]).await;
        let steps = (0..200)
            .map(|_| Step::tool_call("no_such_tool", json!({})))
            .chain([Step::text("done")])
            .collect();
        measure_http("http events", steps).await;
        measure(
            "engine deltas",
            Arc::new(InstantModel {
                rounds: 0,
                deltas: 200_000,
            }),
        )
        .await;
        measure(
            "engine events",
            Arc::new(InstantModel {
                rounds: 2_000,
                deltas: 1,
            }),
        )
        .await;
    });
}
