//! The PUB socket: one writer task owns it; everything published goes
//! through [`Publisher`] in order. A message is ONE frame: the topic, a
//! NUL byte, then the JSON envelope. On stop the writer sends what is
//! queued, then `instance.shutdown`, lingers so subscribers receive it,
//! and only then closes the socket.

use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use zeromq::{PubSocket, Socket, SocketSend, ZmqMessage};

use crate::time::now_rfc3339;
use crate::wire::{Envelope, ShutdownPayload, topic};

/// Frames queued for the socket before publishers wait.
const QUEUE: usize = 4096;

/// How long the socket stays open after `instance.shutdown`.
pub(crate) const LINGER: Duration = Duration::from_millis(500);

/// Publishes on the instance's PUB socket. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Publisher {
    tx: mpsc::Sender<Bytes>,
    instance_id: String,
}

impl Publisher {
    /// Publishes `payload` on `topic`, about `session` if given. Nothing
    /// happens once the socket closed.
    pub(crate) async fn publish(&self, topic: &str, session: Option<&str>, payload: Value) {
        let frame = frame(&self.instance_id, topic, session, payload);
        let _ = self.tx.send(frame).await;
    }
}

/// The one frame of a PUB message.
pub(crate) fn frame(
    instance_id: &str,
    topic: &str,
    session: Option<&str>,
    payload: Value,
) -> Bytes {
    let envelope = Envelope {
        instance_id: instance_id.to_owned(),
        project_id: String::new(),
        session_id: session.map(str::to_owned),
        topic: topic.to_owned(),
        timestamp: now_rfc3339(),
        payload,
    };
    let mut out = Vec::with_capacity(topic.len() + 256);
    out.extend_from_slice(topic.as_bytes());
    out.push(0);
    // An envelope of strings and a `Value` always serializes.
    let _ = serde_json::to_writer(&mut out, &envelope);
    Bytes::from(out)
}

/// Starts the writer of `socket`; it runs until `stop`, then says
/// `instance.shutdown` and closes the socket (the returned task ends then).
pub(crate) fn start_writer(
    mut socket: PubSocket,
    instance_id: String,
    stop: CancellationToken,
) -> (Publisher, tokio::task::JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(QUEUE);
    let publisher = Publisher {
        tx,
        instance_id: instance_id.clone(),
    };
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                frame = rx.recv() => match frame {
                    Some(frame) => send(&mut socket, frame).await,
                    None => break,
                },
                () = stop.cancelled() => break,
            }
        }
        while let Ok(frame) = rx.try_recv() {
            send(&mut socket, frame).await;
        }
        let payload = ShutdownPayload {
            instance_id: instance_id.clone(),
            reason: Some("gantry serve is stopping".to_owned()),
        };
        let payload = serde_json::to_value(payload).unwrap_or_default();
        send(
            &mut socket,
            frame(&instance_id, topic::INSTANCE_SHUTDOWN, None, payload),
        )
        .await;
        tokio::time::sleep(LINGER).await;
        let _ = socket.close().await;
    });
    (publisher, task)
}

async fn send(socket: &mut PubSocket, frame: Bytes) {
    if let Err(e) = socket.send(ZmqMessage::from(frame)).await {
        tracing::debug!(error = %e, "Pando PUB send failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_frame_is_topic_nul_envelope() {
        let f = frame("inst", "llm.token", Some("s1"), json!({"token": "hi"}));
        let nul = f.iter().position(|b| *b == 0).unwrap();
        assert_eq!(&f[..nul], b"llm.token");
        let env: Value = serde_json::from_slice(&f[nul + 1..]).unwrap();
        assert_eq!(env["instanceId"], "inst");
        assert_eq!(env["projectId"], "");
        assert_eq!(env["sessionId"], "s1");
        assert_eq!(env["topic"], "llm.token");
        assert_eq!(env["payload"]["token"], "hi");
        assert!(env["timestamp"].as_str().unwrap().ends_with('Z'));
        let bare = frame("inst", "instance.heartbeat", None, json!({}));
        let env: Value = serde_json::from_slice(&bare["instance.heartbeat\0".len()..]).unwrap();
        assert!(env.get("sessionId").is_none());
    }
}
