//! `GET /v1/threads/{id}/events` and `GET /v1/events`: the engine's
//! notifications over Server-Sent Events.
//!
//! Each durable event goes as `event: <type>` (the engine event's type,
//! e.g. `turn_started`), `id: <seq>` (a thread's) or `id: <cursor>` (all
//! threads'), and its JSON. Streaming output goes live as `event: delta`
//! with `id: <seq>/<item>/<offset>`: the client then has the first
//! `offset` bytes of that item's output. A client reconnecting with
//! `Last-Event-ID` gets what follows, nothing missed and nothing twice:
//! events from the store, and of an item in progress only the bytes it
//! lacks. A comment every 15 s keeps idle connections open. A deleted
//! thread is said as `event: thread_deleted` with no `id:` (it is no
//! event of the log, so resuming is unchanged): on every thread's stream,
//! and as the last event of that thread's own stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};
use gantry_core::{
    Engine, EngineError, EngineEventKind, EngineEventNotice, EngineEvents, Notification,
    Subscription,
};
use gantry_types::{Delta, Event, EventPayload, ThreadId};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::Query;

/// How often an idle stream sends a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Where to start a stream without `Last-Event-ID`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    /// Start after this seq (a thread's stream; default 0: the whole log)
    /// or commit cursor (all threads'; default: from now on).
    #[serde(default)]
    pub(crate) after: Option<u64>,
}

/// Where a client is in a stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResumePoint {
    /// It has every event up to this seq (or cursor).
    after: u64,
    /// And the first bytes of this item's output.
    item: Option<(String, usize)>,
}

impl ResumePoint {
    /// Parses `SEQ` or `SEQ/ITEM/OFFSET`.
    fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().splitn(3, '/');
        let after = parts.next()?.parse().ok()?;
        let item = match (parts.next(), parts.next()) {
            (None, None) => None,
            (Some(item), Some(offset)) if !item.is_empty() => {
                Some((item.to_owned(), offset.parse().ok()?))
            }
            _ => return None,
        };
        Some(Self { after, item })
    }
}

/// The resume point a request names: `Last-Event-ID`, else `?after=`.
fn resume_point(headers: &HeaderMap, query: &StreamQuery) -> Result<Option<ResumePoint>, ApiError> {
    if let Some(value) = headers.get("last-event-id") {
        let text = value
            .to_str()
            .map_err(|_| ApiError::bad_request("Last-Event-ID: not text"))?;
        if !text.trim().is_empty() {
            return ResumePoint::parse(text).map(Some).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Last-Event-ID: `{text}` is not an id of this stream (SEQ or SEQ/ITEM/OFFSET)"
                ))
            });
        }
    }
    Ok(query.after.map(|after| ResumePoint { after, item: None }))
}

/// A thread's events.
#[utoipa::path(
    get, path = "/v1/threads/{id}/events", tag = "events",
    params(("id" = String, Path, description = "Thread id"), StreamQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "Server-Sent Events: `event:` the engine event's type or `delta`, `id:` the seq", content_type = "text/event-stream", body = String),
        (status = 400, description = "A bad Last-Event-ID", body = crate::error::ErrorBody),
        (status = 404, description = "No such thread", body = crate::error::ErrorBody),
    )
)]
pub(crate) async fn thread_events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let from = resume_point(&headers, &query)?.unwrap_or_default();
    let thread = ThreadId(id);
    let sub = state
        .engine
        .feeds()
        .subscribe(&thread, from.after + 1)
        .await?;
    let follower = Follower::new(state.engine.clone(), Target::Thread(thread), sub, from);
    Ok(respond(&state, follower))
}

/// Every thread's events.
#[utoipa::path(
    get, path = "/v1/events", tag = "events",
    params(StreamQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this event id")),
    responses(
        (status = 200, description = "Server-Sent Events: `event:` the engine event's type or `delta`, `id:` the commit cursor", content_type = "text/event-stream", body = String),
        (status = 400, description = "A bad Last-Event-ID", body = crate::error::ErrorBody),
    )
)]
pub(crate) async fn all_events(
    State(state): State<AppState>,
    Query(query): Query<StreamQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let (sub, from) = match resume_point(&headers, &query)? {
        Some(from) => (
            state.engine.feeds().subscribe_all(from.after + 1).await?,
            from,
        ),
        None => {
            let sub = state.engine.feeds().subscribe_all_now();
            let after = sub.resume_from().saturating_sub(1);
            (sub, ResumePoint { after, item: None })
        }
    };
    let follower = Follower::new(state.engine.clone(), Target::All, sub, from);
    Ok(respond(&state, follower))
}

fn respond(state: &AppState, follower: Follower) -> Response {
    // A comment first: the headers go out at once (not with the first
    // event, which may be a keep-alive away), so a client knows it is live.
    let opened = stream::once(async { Ok(SseEvent::default().comment("live")) });
    let events = opened
        .chain(follower.into_stream())
        .take_until(state.stop.clone().cancelled_owned());
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // The connection ends with the stream. Without this, a browser that
    // leaves the page keeps the socket to drain a body that never ends (for
    // about a minute), and after a few reloads waits for a free socket to
    // this host before it can load anything.
    response.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    response
}

/// What a stream follows.
enum Target {
    Thread(ThreadId),
    All,
}

/// One client's stream: a subscription, and what of each item in progress
/// the client has.
pub(crate) struct Follower {
    engine: Engine,
    target: Target,
    sub: Subscription,
    /// The id of the last event sent (seq, or cursor).
    last: u64,
    /// Bytes of each item in progress the client has.
    sent: HashMap<String, usize>,
    /// Bytes of each item this subscription delivered: a subscription
    /// starts each item in progress with its text so far.
    seen: HashMap<String, usize>,
    /// All threads: engine-wide events, for the threads deleted.
    deletions: Option<EngineEvents>,
    /// The stream said its last event.
    ended: bool,
}

/// What a follower waits for next.
enum Next {
    Feed(Option<Notification>),
    Engine(Option<EngineEventNotice>),
}

impl Follower {
    fn new(engine: Engine, target: Target, sub: Subscription, from: ResumePoint) -> Self {
        let mut sent = HashMap::new();
        if let Some((item, offset)) = from.item {
            sent.insert(item, offset);
        }
        let deletions = match target {
            Target::All => Some(engine.feeds().engine_events()),
            Target::Thread(_) => None,
        };
        Self {
            engine,
            target,
            sub,
            last: from.after,
            sent,
            seen: HashMap::new(),
            deletions,
            ended: false,
        }
    }

    fn into_stream(self) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send {
        stream::unfold(self, |mut follower| async move {
            loop {
                match follower.next().await {
                    Ok(Some(Some(event))) => return Some((Ok(event), follower)),
                    Ok(Some(None)) => continue,
                    Ok(None) => return None,
                    Err(e) => {
                        tracing::warn!(error = %e, "an HTTP API event stream ended");
                        return None;
                    }
                }
            }
        })
    }

    /// The next SSE event (`Some(None)`: nothing to send for this
    /// notification); `None` once the engine stopped.
    async fn next(&mut self) -> Result<Option<Option<SseEvent>>, EngineError> {
        if self.ended {
            return Ok(None);
        }
        let notification = loop {
            let next = match &mut self.deletions {
                // Both are cancel-safe: what one of them had not yet
                // taken stays for the next call.
                Some(events) => tokio::select! {
                    n = self.sub.next() => Next::Feed(n),
                    e = events.recv() => Next::Engine(e),
                },
                None => Next::Feed(self.sub.next().await),
            };
            let next = match next {
                Next::Feed(n) => n,
                Next::Engine(Some(EngineEventNotice::Event(e))) => {
                    if let EngineEventKind::ThreadDeleted { thread_id } = e.kind {
                        return Ok(Some(Some(deleted(&thread_id))));
                    }
                    continue;
                }
                Next::Engine(Some(EngineEventNotice::Lagged { .. })) => continue,
                Next::Engine(None) => return Ok(None),
            };
            match next {
                None => return Ok(self.thread_gone().await.map(Some)),
                Some(Notification::Lagged { resume_from }) => {
                    self.sub = match &self.target {
                        Target::Thread(id) => {
                            self.engine.feeds().subscribe(id, resume_from).await?
                        }
                        Target::All => self.engine.feeds().subscribe_all(resume_from).await?,
                    };
                    self.seen.clear();
                }
                Some(n) => break n,
            }
        };
        Ok(Some(match notification {
            Notification::Event(event) => self.event(&event),
            Notification::Delta(delta) => self.delta(&delta),
            Notification::Lagged { .. } => None,
        }))
    }

    /// A thread's feed ended: its last event if the thread was deleted
    /// (not when the server stops).
    async fn thread_gone(&mut self) -> Option<SseEvent> {
        self.ended = true;
        let Target::Thread(id) = &self.target else {
            return None;
        };
        match self.engine.threads().read(id).await {
            Err(EngineError::ThreadNotFound(_)) => Some(deleted(id)),
            _ => None,
        }
    }

    fn event(&mut self, event: &Event) -> Option<SseEvent> {
        let id = match self.target {
            Target::Thread(_) => event.seq,
            Target::All => event.cursor,
        };
        if id <= self.last {
            return None;
        }
        self.last = id;
        if let (EventPayload::ItemCompleted { .. }, Some(item)) = (&event.payload, &event.item_id) {
            self.sent.remove(&item.0);
            self.seen.remove(&item.0);
        }
        let data = serde_json::to_value(event).unwrap_or_default();
        let kind = data["payload"]["type"]
            .as_str()
            .unwrap_or("event")
            .to_owned();
        Some(
            SseEvent::default()
                .id(id.to_string())
                .event(kind)
                .data(data.to_string()),
        )
    }

    fn delta(&mut self, delta: &Delta) -> Option<SseEvent> {
        let item = &delta.item_id.0;
        let text = delta.kind.text();
        let start = self.seen.get(item).copied().unwrap_or(0);
        let end = start + text.len();
        self.seen.insert(item.clone(), end);
        let has = self.sent.get(item).copied().unwrap_or(0);
        if end <= has {
            return None;
        }
        let fresh = text.get(has.saturating_sub(start)..)?;
        self.sent.insert(item.clone(), end);
        let kind = serde_json::to_value(&delta.kind).unwrap_or_default();
        let data = json!({
            "thread_id": delta.thread_id,
            "turn_id": delta.turn_id,
            "item_id": delta.item_id,
            "after_seq": delta.after_seq,
            "delta": kind["delta"],
            "text": fresh,
        });
        Some(
            SseEvent::default()
                .id(format!("{}/{item}/{end}", self.last))
                .event("delta")
                .data(data.to_string()),
        )
    }
}

/// `event: thread_deleted`, with no id: resuming goes on from the last one.
fn deleted(thread: &ThreadId) -> SseEvent {
    SseEvent::default()
        .event("thread_deleted")
        .data(json!({ "thread_id": thread }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_points_parse_both_forms() {
        assert_eq!(
            ResumePoint::parse("12"),
            Some(ResumePoint {
                after: 12,
                item: None
            })
        );
        assert_eq!(
            ResumePoint::parse("12/it-1/40"),
            Some(ResumePoint {
                after: 12,
                item: Some(("it-1".into(), 40))
            })
        );
        assert_eq!(ResumePoint::parse("x"), None);
        assert_eq!(ResumePoint::parse("3/it"), None);
        assert_eq!(ResumePoint::parse("3//4"), None);
    }
}
