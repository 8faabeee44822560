//! The runner's side of the wire in the version it speaks: the
//! registration, and the control channel as version-independent messages
//! in and out (`gantry_runner_protocol::map` does the mapping). Messages
//! that the version has no place for are dropped, logged once per kind.

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use gantry_grpc::RawCodec;
use gantry_runner_protocol::messages::{ClientMessage, Registration, Request};
use gantry_runner_protocol::{CONTROL_CHANNEL_PATH, Inbound, ProtocolVersion, map, v0_2, v0_7};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::Status;
use tonic::codegen::http;

use super::endpoint::Outbound;

/// A request as it came: its id, and the request or why it is not taken.
pub(crate) struct Incoming {
    pub request_id: Option<String>,
    pub request: Result<Request, Inbound>,
}

/// The control plane's side of an open channel.
pub(crate) type Requests = Pin<Box<dyn Stream<Item = Result<Incoming, Status>> + Send>>;

/// Registers what the runner offers.
pub(crate) async fn register(
    version: ProtocolVersion,
    channel: Outbound,
    registration: &Registration,
) -> Result<(), Status> {
    match version {
        ProtocolVersion::V0_2 => {
            let mut client =
                v0_2::agent_runner_control_service_client::AgentRunnerControlServiceClient::new(
                    channel,
                );
            client
                .register_runner(map::v0_2::registration(registration))
                .await?;
        }
        ProtocolVersion::V0_7 => {
            let mut client =
                v0_7::agent_runner_control_service_client::AgentRunnerControlServiceClient::new(
                    channel,
                );
            client
                .register_runner(map::v0_7::registration(registration))
                .await?;
        }
    }
    Ok(())
}

/// Opens the control channel: what `outgoing` yields goes out, requests
/// come back. Both ways travel as bytes, mapped here in the version
/// spoken: a request of a kind the version does not know is named from its
/// bytes (prost would drop the field, and with it what it was).
pub(crate) async fn open(
    version: ProtocolVersion,
    channel: Outbound,
    outgoing: mpsc::Receiver<ClientMessage>,
) -> Result<Requests, Status> {
    let dropped = DroppedKinds::default();
    let out = ReceiverStream::new(outgoing)
        .filter_map(move |m| dropped.keep(version.encode_client(&m)).map(Bytes::from));
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(format!("control plane not ready: {e}")))?;
    let path = http::uri::PathAndQuery::from_static(CONTROL_CHANNEL_PATH);
    let inbound = grpc
        .streaming(tonic::Request::new(out), path, RawCodec)
        .await?
        .into_inner();
    Ok(Box::pin(inbound.map(move |bytes| {
        bytes.map(|bytes| match version.decode_server(&bytes) {
            Ok(m) => Incoming {
                request_id: m.request_id.filter(|id| !id.is_empty()),
                request: Ok(m.request),
            },
            Err(why) => Incoming {
                request_id: request_id_of(version, &bytes),
                request: Err(why),
            },
        })
    })))
}

/// The request id of a request that did not map (so a refusal can echo
/// it): the one field both versions' `ServerMessage` share.
fn request_id_of(version: ProtocolVersion, bytes: &[u8]) -> Option<String> {
    use prost::Message;
    let id = match version {
        ProtocolVersion::V0_2 => v0_2::ServerMessage::decode(bytes).ok()?.request_id,
        ProtocolVersion::V0_7 => Some(v0_7::ServerMessage::decode(bytes).ok()?.request_id),
    };
    id.filter(|id| !id.is_empty())
}

/// The kinds of message dropped for want of a place in the version, so
/// each is logged once.
#[derive(Clone, Default)]
struct DroppedKinds(Arc<Mutex<HashSet<&'static str>>>);

impl DroppedKinds {
    fn keep<T>(&self, mapped: Result<T, gantry_runner_protocol::NotInVersion>) -> Option<T> {
        match mapped {
            Ok(message) => Some(message),
            Err(why) => {
                let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
                if seen.insert(why.what) {
                    tracing::warn!(%why, "not sent (logged once per kind)");
                }
                None
            }
        }
    }
}
