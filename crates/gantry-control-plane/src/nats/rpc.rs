//! Routing: a request for a runner whose channel is on another replica is
//! sent to that replica over NATS request/reply (`gantry.cp.<replica>.rpc`),
//! which records it, sends it on the channel and answers with the runner's
//! reply, or with the API error it met there (the same one a local request
//! gets). The request and the reply travel as the runner's own protobuf in
//! its version, inside a small JSON envelope, signed (`seal`): the request
//! with its subject and time, the answer with the request's signature.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use futures_util::StreamExt;
use gantry_runner_protocol::messages::{ClientMessage, Payload, ServerMessage};
use gantry_runner_protocol::{ProtocolVersion, map};
use prost::Message as _;
use serde::{Deserialize, Serialize};

use super::Cluster;
use super::seal::{Kind, Seal, now_ms};
use crate::ControlPlane;
use crate::error::ApiError;
use crate::store::RequestRecord;

/// How much longer than the runner's own timeout the asking replica waits
/// for the holding one (which answers a timeout itself).
const GRACE: Duration = Duration::from_secs(5);

/// A request for a runner held by another replica.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Call {
    /// The runner.
    pub runner_id: String,
    /// Its version (the message's encoding).
    pub protocol: String,
    /// The `ServerMessage`, protobuf in that version, base64.
    pub message: String,
    /// The request as recorded before it is sent.
    pub record: Record,
    /// Whether to wait for the runner's reply (else only send).
    pub wait: bool,
}

/// [`RequestRecord`] on the wire.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    id: String,
    kind: String,
    agent_id: Option<String>,
    thread_id: Option<String>,
    params: String,
    created_at: i64,
}

/// The holding replica's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    /// The runner's reply: a `ClientMessage`, protobuf in its version, base64.
    Reply(String),
    /// Sent, with no reply awaited.
    Sent,
    /// The API error met there: its kind and message.
    Error { kind: String, message: String },
}

impl Call {
    /// The call for `message` (whose id is the record's) to `runner_id`.
    pub(crate) fn new(
        version: ProtocolVersion,
        message: &ServerMessage,
        record: &RequestRecord,
        wait: bool,
    ) -> Result<Self, ApiError> {
        let bytes = match version {
            ProtocolVersion::V0_2 => map::v0_2::server_to_wire(message).map(|m| m.encode_to_vec()),
            ProtocolVersion::V0_7 => map::v0_7::server_to_wire(message).map(|m| m.encode_to_vec()),
        }
        .map_err(|why| ApiError::Conflict(format!("runner {}: {why}", record.runner_id)))?;
        Ok(Self {
            runner_id: record.runner_id.clone(),
            protocol: version.to_string(),
            message: B64.encode(bytes),
            record: Record {
                id: record.id.clone(),
                kind: record.kind.clone(),
                agent_id: record.agent_id.clone(),
                thread_id: record.thread_id.clone(),
                params: record.params.clone(),
                created_at: record.created_at,
            },
            wait,
        })
    }

    fn version(&self) -> Result<ProtocolVersion, ApiError> {
        self.protocol
            .parse()
            .map_err(|_| ApiError::BadGateway(format!("unknown protocol {:?}", self.protocol)))
    }

    /// The message and its record, as the holding replica reads them.
    fn open(&self) -> Result<(ServerMessage, RequestRecord), ApiError> {
        let bad =
            |why: String| ApiError::BadGateway(format!("a routed request is unreadable: {why}"));
        let bytes = B64.decode(&self.message).map_err(|e| bad(e.to_string()))?;
        let message = match self.version()? {
            ProtocolVersion::V0_2 => gantry_runner_protocol::v0_2::ServerMessage::decode(&*bytes)
                .map_err(|e| bad(e.to_string()))
                .and_then(|m| map::v0_2::server_from_wire(m).map_err(|e| bad(e.to_string()))),
            ProtocolVersion::V0_7 => gantry_runner_protocol::v0_7::ServerMessage::decode(&*bytes)
                .map_err(|e| bad(e.to_string()))
                .and_then(|m| map::v0_7::server_from_wire(m).map_err(|e| bad(e.to_string()))),
        }?;
        let r = &self.record;
        let record = RequestRecord {
            id: r.id.clone(),
            runner_id: self.runner_id.clone(),
            kind: r.kind.clone(),
            agent_id: r.agent_id.clone(),
            thread_id: r.thread_id.clone(),
            turn_id: None,
            params: r.params.clone(),
            created_at: r.created_at,
        };
        Ok((message, record))
    }
}

/// The subject replica `replica` serves routed requests on.
fn subject(replica: &str) -> String {
    format!("gantry.cp.{replica}.rpc")
}

/// The header of a message's signature.
const SIGNATURE: &str = "Gantry-Signature";

/// The header of when a request was made (ms since the epoch).
const AT: &str = "Gantry-At";

/// The seal, or the error of a cluster never started (no secret yet).
fn sealed(cluster: &Cluster) -> Result<&Seal, ApiError> {
    cluster
        .seal()
        .ok_or_else(|| ApiError::Internal("the replicas' secret is not loaded".into()))
}

/// Why a routed request is refused, if it is: unsigned, signed with
/// another secret, stale or seen before. Its signature when taken.
fn check_call(seal: &Seal, message: &async_nats::Message) -> Result<String, &'static str> {
    let header = |name: &str| {
        message
            .headers
            .as_ref()
            .and_then(|h| h.get(name))
            .map(|v| v.as_str().to_owned())
    };
    let (Some(signature), Some(at)) = (header(SIGNATURE), header(AT)) else {
        return Err("it is not signed");
    };
    let parts: [&[u8]; 3] = [message.subject.as_bytes(), at.as_bytes(), &message.payload];
    if !seal.verify(Kind::Call, &parts, &signature) {
        return Err("its signature is not one of this store's replicas");
    }
    let at: i64 = at.parse().map_err(|_| "its time is unreadable")?;
    if !seal.fresh(&signature, at) {
        return Err("it was made too long ago, or taken before (a replay)");
    }
    Ok(signature)
}

impl Cluster {
    /// Sends `call` to `replica` and returns the runner's reply (`None` when
    /// the call only sends), or the error the holding replica met.
    pub(crate) async fn call(
        &self,
        replica: &str,
        call: &Call,
        timeout: Duration,
    ) -> Result<Option<Payload>, ApiError> {
        let body = serde_json::to_vec(call)
            .map_err(|e| ApiError::Internal(format!("cannot encode a routed request: {e}")))?;
        let seal = sealed(self)?;
        let to = subject(replica);
        let at = now_ms().to_string();
        let signature = seal.sign(Kind::Call, &[to.as_bytes(), at.as_bytes(), &body]);
        let mut headers = async_nats::HeaderMap::new();
        headers.insert(SIGNATURE, signature.as_str());
        headers.insert(AT, at.as_str());
        let request = async_nats::Request::new()
            .payload(body.into())
            .headers(headers)
            .timeout(Some(timeout + GRACE));
        let answer = self
            .inner
            .client
            .send_request(to, request)
            .await
            .map_err(|e| match e.kind() {
                // Nobody serves the replica's subject: it died without a
                // goodbye (its lease has not run out yet). NATS says so at
                // once, rather than the request waiting out its timeout.
                async_nats::client::RequestErrorKind::NoResponders => {
                    ApiError::Unavailable(format!(
                        "runner {} is offline: replica {replica}, which held it, is gone; \
                         the runner is back once it connects to a live replica",
                        call.runner_id
                    ))
                }
                async_nats::client::RequestErrorKind::TimedOut => ApiError::Timeout(format!(
                    "replica {replica} did not answer for runner {} in time",
                    call.runner_id
                )),
                _ => ApiError::Unavailable(format!("cannot reach replica {replica}: {e}")),
            })?;
        let signed = answer
            .headers
            .as_ref()
            .and_then(|h| h.get(SIGNATURE))
            .is_some_and(|a| {
                seal.verify(
                    Kind::Answer,
                    &[signature.as_bytes(), &answer.payload],
                    a.as_str(),
                )
            });
        if !signed {
            return Err(ApiError::BadGateway(format!(
                "an answer for runner {} did not come from replica {replica}: its signature \
                 is not one of this store's replicas",
                call.runner_id
            )));
        }
        let answer: Answer = serde_json::from_slice(&answer.payload).map_err(|e| {
            ApiError::BadGateway(format!("replica {replica} answered unreadably: {e}"))
        })?;
        match answer {
            Answer::Sent => Ok(None),
            Answer::Error { kind, message } => Err(error_of(&kind, message)),
            Answer::Reply(reply) => {
                let bytes = B64.decode(reply).map_err(|e| {
                    ApiError::BadGateway(format!("replica {replica} answered unreadably: {e}"))
                })?;
                let reply = call.version()?.decode_client(&bytes).map_err(|e| {
                    ApiError::BadGateway(format!(
                        "replica {replica} relayed an unreadable reply: {e}"
                    ))
                })?;
                Ok(Some(reply.payload))
            }
        }
    }
}

/// Serves the requests routed to this replica until the control plane stops.
pub(super) async fn serve(cluster: Cluster, cp: ControlPlane) {
    let client = &cluster.inner.client;
    let mut calls = match client.subscribe(subject(&cluster.inner.replica)).await {
        Ok(calls) => calls,
        Err(e) => {
            tracing::error!(error = %e, "cannot serve routed requests: other replicas cannot reach this one's runners");
            return;
        }
    };
    let stop = cp.inner.stop.clone();
    loop {
        let call = tokio::select! {
            call = calls.next() => call,
            () = stop.cancelled() => return,
        };
        let Some(call) = call else { return };
        let Some(reply_to) = call.reply.clone() else {
            continue;
        };
        let Some(seal) = cluster.seal() else { return };
        let signature = match check_call(seal, &call) {
            Ok(signature) => signature,
            Err(why) => {
                // Not from a replica of this store: nothing of it runs,
                // and the sender learns only that it was refused.
                tracing::warn!(subject = %call.subject, why, "a routed request was refused");
                let refused = Answer::Error {
                    kind: "bad_request".into(),
                    message: format!("refused: {why}"),
                };
                let body = serde_json::to_vec(&refused).unwrap_or_default();
                let _ = client.publish(reply_to, body.into()).await;
                continue;
            }
        };
        let (cluster, cp) = (cluster.clone(), cp.clone());
        tokio::spawn(async move {
            let answer = match serde_json::from_slice::<Call>(&call.payload) {
                Ok(call) => answer(&cp, call).await,
                Err(e) => Answer::Error {
                    kind: "bad_gateway".into(),
                    message: format!("a routed request is unreadable: {e}"),
                },
            };
            let body = serde_json::to_vec(&answer).unwrap_or_default();
            let mut headers = async_nats::HeaderMap::new();
            if let Some(seal) = cluster.seal() {
                let signed = seal.sign(Kind::Answer, &[signature.as_bytes(), &body]);
                headers.insert(SIGNATURE, signed.as_str());
            }
            let client = &cluster.inner.client;
            if let Err(e) = client
                .publish_with_headers(reply_to, headers, body.into())
                .await
            {
                tracing::debug!(error = %e, "cannot answer a routed request");
            }
        });
    }
}

/// Performs a routed call here.
async fn answer(cp: &ControlPlane, call: Call) -> Answer {
    let result = async {
        let version = call.version()?;
        let (message, record) = call.open()?;
        let runner_id = call.runner_id.clone();
        if call.wait {
            let payload = cp.ask_here(&runner_id, message, record).await?;
            let reply = ClientMessage {
                request_id: Some(call.record.id.clone()),
                payload,
            };
            let bytes = match version {
                ProtocolVersion::V0_2 => {
                    map::v0_2::client_to_wire(&reply).map(|m| m.encode_to_vec())
                }
                ProtocolVersion::V0_7 => {
                    map::v0_7::client_to_wire(&reply).map(|m| m.encode_to_vec())
                }
            }
            .map_err(|why| ApiError::BadGateway(format!("runner {runner_id}'s reply: {why}")))?;
            Ok(Answer::Reply(B64.encode(bytes)))
        } else {
            cp.send_here(&runner_id, message, record).await?;
            Ok(Answer::Sent)
        }
    };
    result.await.unwrap_or_else(|e: ApiError| Answer::Error {
        kind: kind_of(&e).to_owned(),
        message: e.to_string(),
    })
}

/// The name of an error's kind on the wire.
fn kind_of(error: &ApiError) -> &'static str {
    match error {
        ApiError::BadRequest(_) => "bad_request",
        ApiError::NotFound(_) => "not_found",
        ApiError::Conflict(_) => "conflict",
        ApiError::Unavailable(_) => "unavailable",
        ApiError::Timeout(_) => "timeout",
        ApiError::BadGateway(_) => "bad_gateway",
        ApiError::Internal(_) => "internal",
    }
}

/// The error of a kind named on the wire.
fn error_of(kind: &str, message: String) -> ApiError {
    match kind {
        "bad_request" => ApiError::BadRequest(message),
        "not_found" => ApiError::NotFound(message),
        "conflict" => ApiError::Conflict(message),
        "unavailable" => ApiError::Unavailable(message),
        "timeout" => ApiError::Timeout(message),
        "internal" => ApiError::Internal(message),
        _ => ApiError::BadGateway(message),
    }
}
