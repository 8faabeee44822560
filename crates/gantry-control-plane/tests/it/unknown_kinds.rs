//! A runner that sends messages of kinds its version does not have gets
//! them dropped, and the control plane's log says so once per kind, not
//! once per message (a chatty runner must not flood it).

use crate::support;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gantry_runner_protocol::v0_7 as pb7;
use gantry_runner_protocol::v0_7::agent_runner_control_service_client::AgentRunnerControlServiceClient;
use gantry_runner_protocol::v0_7::client_message::Payload;
use support::{Bearer, Harness, client, guarded, offering};
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

/// The log as text, with a signal on every write (no polling).
#[derive(Clone)]
struct Captured {
    text: Arc<Mutex<Vec<u8>>>,
    written: watch::Sender<usize>,
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.text.lock().unwrap()).into_owned()
    }

    /// Waits until the log holds `needle`.
    async fn wait_for(&self, needle: &str) {
        let mut written = self.written.subscribe();
        guarded(&format!("{needle:?} in the log"), async {
            while !self.text().contains(needle) {
                written.changed().await.unwrap();
            }
        })
        .await;
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.text.lock().unwrap().extend_from_slice(buf);
        self.written.send_modify(|n| *n += 1);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn message(payload: Payload) -> pb7::ClientMessage {
    pb7::ClientMessage {
        request_id: None,
        payload: Some(payload),
    }
}

// The control plane's tasks run on this (current-thread) runtime's thread,
// where the capturing subscriber is the default.
#[tokio::test]
async fn messages_of_kinds_the_runners_version_lacks_are_logged_once_per_kind() {
    let (written, _) = watch::channel(0);
    let captured = Captured {
        text: Arc::default(),
        written,
    };
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .finish();
    let _default = tracing::subscriber::set_default(subscriber);

    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start(dir.path(), Duration::from_secs(5)).await;
    let (_, token) = h.add_runner("old").await;
    // Registers as 0.2.0 does (no SDK status), then sends 0.7.0's kinds.
    guarded(
        "RegisterRunner",
        client(h.grpc, &token)
            .await
            .register_runner(offering("gantry", &["m"])),
    )
    .await
    .unwrap();
    let channel = Channel::from_shared(format!("http://{}", h.grpc))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut runner = AgentRunnerControlServiceClient::with_interceptor(channel, Bearer(token));
    let (outbound, rx) = mpsc::channel(16);
    let _inbound = guarded(
        "ControlChannel",
        runner.control_channel(ReceiverStream::new(rx)),
    )
    .await
    .unwrap();

    let name = || {
        message(Payload::ThreadNameUpdate(pb7::ThreadNameUpdate {
            thread_id: "t".into(),
            thread_name: Some("a name".into()),
        }))
    };
    let heartbeat = || message(Payload::HeartbeatResponse(pb7::HeartbeatResponse {}));
    for m in [name(), heartbeat(), name(), name(), heartbeat(), name()] {
        outbound.send(m).await.unwrap();
    }
    // A message that is logged every time, read after the others (one
    // channel is read in order): once it is in the log, they all were.
    outbound
        .send(message(Payload::RequestError(pb7::RequestError {
            error_message: String::new(),
        })))
        .await
        .unwrap();
    captured
        .wait_for("invalid message from runner dropped")
        .await;

    let log = captured.text();
    let unknown: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("does not know"))
        .collect();
    assert_eq!(unknown.len(), 2, "one line per kind:\n{log}");
    // Each named, as the version that has it names it.
    assert!(
        unknown
            .iter()
            .any(|l| l.contains("kind=\"thread_name_update\"") && l.contains("field=8")),
        "{log}"
    );
    assert!(
        unknown
            .iter()
            .any(|l| l.contains("kind=\"heartbeat_response\"") && l.contains("field=9")),
        "{log}"
    );
    assert!(unknown.iter().all(|l| l.contains("protocol=0.2")), "{log}");
    h.stop().await;
}
