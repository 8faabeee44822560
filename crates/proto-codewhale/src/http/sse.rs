//! `GET /thread/{id}/events`: a thread's frames over Server-Sent Events,
//! from its start or from `Last-Event-ID`. Each frame is one `data:` line
//! (its JSON); the last frame of each notification carries `id: SEQ`, or
//! `id: SEQ/ITEM/OFFSET/...` while items are in progress (the bytes of each
//! item's output the client has), so a client that reconnects with the last
//! id it saw gets the next frame, with nothing missed and nothing twice.
//!
//! `GET /events`: the frames of no thread (MCP servers' startup) from the
//! engine-wide events it keeps, `id:` their seq, resumable the same way.

use std::convert::Infallible;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};
use gantry_types::ThreadId;

use super::AppState;
use crate::frames::{FrameFeed, Framed, ResumePoint, engine_frame};
use gantry_core::{EngineEventNotice, EngineEvents};

pub(super) async fn follow(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let from = match headers.get("last-event-id").map(|v| v.to_str()) {
        None => ResumePoint::default(),
        Some(Ok(text)) => match ResumePoint::parse(text) {
            Some(point) => point,
            None => {
                return bad_request(format!(
                    "Last-Event-ID: `{text}` is not an id of this stream"
                ));
            }
        },
        Some(Err(_)) => return bad_request("Last-Event-ID: not text".to_owned()),
    };
    match state.cw.view(&id).await {
        Ok(Some(_)) => {}
        Ok(None) => return StatusCode::NOT_FOUND.into_response(),
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
    let feed = match FrameFeed::open(state.cw.engine(), &ThreadId(id), from).await {
        Ok(feed) => feed,
        Err(e) => return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    };
    let events = frames(feed).take_until(state.stop.clone().cancelled_owned());
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

pub(super) async fn engine_wide(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let from = match headers.get("last-event-id").map(|v| v.to_str()) {
        // The engine keeps its last events: a client that comes after
        // start-up still sees how the servers started.
        None => 1,
        Some(Ok(text)) => match text.trim().parse::<u64>() {
            Ok(seq) => seq.saturating_add(1),
            Err(_) => {
                return bad_request(format!(
                    "Last-Event-ID: `{text}` is not an id of this stream"
                ));
            }
        },
        Some(Err(_)) => return bad_request("Last-Event-ID: not text".to_owned()),
    };
    let events = state.cw.engine().feeds().engine_events_from(from);
    let frames = engine_frames(events).take_until(state.stop.clone().cancelled_owned());
    Sse::new(frames)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The SSE events of engine-wide frames, until the engine stops.
fn engine_frames(events: EngineEvents) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(events, |mut events| async move {
        loop {
            // Lagged: the subscription goes on with newer events.
            let EngineEventNotice::Event(event) = events.recv().await? else {
                continue;
            };
            let seq = event.seq;
            if let Some(frame) = engine_frame(event.kind) {
                let data = serde_json::to_string(&frame).unwrap_or_default();
                return Some((Ok(Event::default().data(data).id(seq.to_string())), events));
            }
        }
    })
}

fn bad_request(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message,
    )
        .into_response()
}

/// The SSE events of a feed, until the engine stops or fails.
fn frames(feed: FrameFeed) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(feed, |mut feed| async move {
        match feed.next().await {
            Ok(Some(batch)) => Some((stream::iter(events(batch)), feed)),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e, "a CodeWhale event stream ended");
                None
            }
        }
    })
    .flatten()
}

/// One notification's frames; the last carries the id to resume after.
fn events(batch: Vec<Framed>) -> Vec<Result<Event, Infallible>> {
    let last = batch.len().saturating_sub(1);
    batch
        .into_iter()
        .enumerate()
        .map(|(i, framed)| {
            let data = serde_json::to_string(&framed.frame).unwrap_or_default();
            let mut event = Event::default().data(data);
            if i == last {
                event = event.id(framed.position.encode());
            }
            Ok(event)
        })
        .collect()
}
