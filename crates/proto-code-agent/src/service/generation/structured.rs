//! `GenerateStructured` and `StreamGenerateStructured`: output valid
//! against the client's JSON Schema, as a structured turn of the session.

use gantry_core::{StructuredChunk, StructuredRequest};
use gantry_types::ThreadId;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::chunks::{pb_usage, usage_metadata};
use super::input::{prompt, ready_session};
use crate::pb;
use crate::service::RpcStream;
use crate::state::Ctx;
use crate::status::status;

/// Chunks buffered between the turn and a slow client.
const STREAM_BUFFER: usize = 256;

/// The session and the engine's request for a structured generation,
/// whose turn keeps the caller's `traceparent`.
async fn request(
    ctx: &Ctx,
    req: &pb::GenerateStructuredRequest,
    trace_parent: Option<String>,
) -> Result<(ThreadId, StructuredRequest), Status> {
    let (id, _) = ready_session(ctx, &req.session_id).await?;
    let text = prompt(&req.messages)?;
    if req.schema.trim().is_empty() {
        return Err(Status::invalid_argument("schema: required"));
    }
    let schema: Value = serde_json::from_str(&req.schema)
        .map_err(|e| Status::invalid_argument(format!("schema: not JSON: {e}")))?;
    let request = StructuredRequest {
        trace_parent,
        ..StructuredRequest::new(text, schema)
    };
    Ok((id, request))
}

/// A failed structured generation's status: a bad schema is the client's
/// input; a turn without valid output is `ABORTED`.
fn failure(error: gantry_core::EngineError) -> Status {
    match error {
        gantry_core::EngineError::InvalidInput(message) => {
            Status::invalid_argument(format!("schema: {message}"))
        }
        other => status(other),
    }
}

/// `GenerateStructured`: the accepted JSON, its usage and turn.
pub(crate) async fn generate_structured(
    ctx: &Ctx,
    req: pb::GenerateStructuredRequest,
    trace_parent: Option<String>,
) -> Result<pb::GenerateStructuredResponse, Status> {
    let (id, request) = request(ctx, &req, trace_parent).await?;
    let output = ctx
        .engine
        .structured()
        .generate(&id, request)
        .await
        .map_err(failure)?;
    let mut metadata = usage_metadata(&output.usage);
    metadata.insert("turn_id".to_owned(), output.turn_id.to_string());
    Ok(pb::GenerateStructuredResponse {
        session_id: id.to_string(),
        data: output.payload.to_string(),
        usage: Some(pb_usage(&output.usage)),
        metadata,
    })
}

/// `StreamGenerateStructured`: the JSON as the model writes it (each chunk
/// adds to `data`; a chunk with empty `data` and `done: false` means the
/// text so far was rejected by the schema and the model starts over), then
/// one chunk with `done: true` carrying the whole accepted JSON.
pub(crate) async fn stream_generate_structured(
    ctx: &Ctx,
    req: pb::GenerateStructuredRequest,
    trace_parent: Option<String>,
) -> Result<RpcStream<pb::GenerateStructuredChunk>, Status> {
    let (id, request) = request(ctx, &req, trace_parent).await?;
    let mut stream = ctx
        .engine
        .structured()
        .stream(&id, request)
        .await
        .map_err(failure)?;
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    let engine = ctx.engine.clone();
    tokio::spawn(async move {
        let session_id = id.to_string();
        let chunk = |data: String, done: bool| pb::GenerateStructuredChunk {
            session_id: session_id.clone(),
            data,
            done,
        };
        while let Some(next) = stream.next().await {
            let out = match next {
                StructuredChunk::Partial(text) => Ok(chunk(text, false)),
                StructuredChunk::Rejected { .. } => Ok(chunk(String::new(), false)),
                StructuredChunk::Done(Ok(output)) => Ok(chunk(output.payload.to_string(), true)),
                StructuredChunk::Done(Err(e)) => Err(failure(e)),
            };
            if tx.send(out).await.is_err() {
                let _ = engine.turns().interrupt(&id).await;
                return;
            }
        }
    });
    Ok(Box::pin(ReceiverStream::new(rx)))
}
