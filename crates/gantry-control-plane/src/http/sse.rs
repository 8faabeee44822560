//! What both event routes share: a stream's response (headers at once, a
//! keep-alive comment every 15 s, the connection closed with the stream)
//! and the `Last-Event-ID` a reconnecting client sends.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, Stream, StreamExt};

use crate::error::ApiError;

/// How often an idle stream sends a comment.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The response streaming `events` until the control plane stops.
pub(super) fn respond(
    events: impl Stream<Item = Event> + Send + 'static,
    stop: tokio_util::sync::CancellationToken,
) -> Response {
    // A comment first: the headers go out at once (not with the first
    // event, which may be a keep-alive away), so a client knows it is live.
    let opened = stream::once(async { Event::default().comment("live") });
    let events = opened
        .chain(events)
        .map(Ok::<_, Infallible>)
        .take_until(stop.cancelled_owned());
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // The connection ends with the stream: a browser leaving the page would
    // otherwise keep the socket (draining a body that never ends) and soon
    // run out of sockets to this host (the dashboard reloaded a few times).
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// The `Last-Event-ID` header's text, when there is one and it is not blank.
pub(super) fn last_event_id(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    let Some(value) = headers.get("last-event-id") else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| ApiError::BadRequest("Last-Event-ID: not text".into()))?
        .trim();
    Ok((!text.is_empty()).then_some(text))
}
