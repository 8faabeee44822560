//! `SubscribeEvents`: what happens in the engine from now on, as
//! `AgentEvent`s: the sessions' own events (sessions, generations, tool
//! calls, confirmations, external tasks, denials, errors) and the
//! engine-wide ones (memory, MCP servers, agents, scheduled jobs, language
//! servers).
//!
//! `mapping` says what each engine event means to a client; `feed` follows
//! the sessions' events; this file joins the two sources, filters, and
//! streams.

mod feed;
mod filter;
mod mapping;

use gantry_core::{EngineEventNotice, EngineEvents};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::{Ctx, RpcStream};
use crate::pb;
use crate::status::{session_id, status};
use feed::{Scope, ThreadFeed};
use filter::Wanted;

/// Events buffered between the engine and a slow client; beyond that the
/// pump waits (and, if far behind, the feed catches up from the log).
const STREAM_BUFFER: usize = 256;

/// `SubscribeEvents`: a stream of what happens from now on, in every
/// session or only in `session_id` (`NOT_FOUND` if unknown; engine-wide
/// events then only when they concern it), of the `event_types` asked for
/// (all when none; `INVALID_ARGUMENT` names an unknown one). It ends when
/// the client goes away or the server shuts down.
pub(crate) async fn subscribe_events(
    ctx: &Ctx,
    req: pb::SubscribeEventsRequest,
) -> Result<RpcStream<pb::AgentEvent>, Status> {
    let wanted = Wanted::parse(&req.event_types)?;
    let scope = match req.session_id.as_deref().map(str::trim) {
        None | Some("") => Scope::All,
        Some(id) => Scope::One(session_id(id)?),
    };
    // Engine-wide events first: the feed's setup (listing the threads)
    // takes a moment, and nothing of that moment should be missed.
    let engine_events = ctx.engine.feeds().engine_events();
    let feed = ThreadFeed::start(ctx.engine.clone(), scope.clone())
        .await
        .map_err(status)?;
    let (tx, rx) = mpsc::channel(STREAM_BUFFER);
    tokio::spawn(pump(
        ctx.engine.clone(),
        feed,
        engine_events,
        scope,
        wanted,
        tx,
    ));
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// Sends the events of both sources the subscriber wants, until it leaves
/// or the engine stops.
async fn pump(
    engine: gantry_core::Engine,
    mut feed: ThreadFeed,
    mut engine_events: EngineEvents,
    scope: Scope,
    wanted: Wanted,
    tx: mpsc::Sender<Result<pb::AgentEvent, Status>>,
) {
    // Engine-wide events stop when the engine is gone; sessions' events may
    // still be draining, so the stream only ends with the feed.
    let mut engine_open = true;
    // After falling behind, engine-wide events are replayed from where the
    // stream left off; what the engine no longer keeps is reported missed.
    let mut replaying_from: Option<u64> = None;
    loop {
        let events = tokio::select! {
            () = tx.closed() => return,
            next = feed.next() => match next {
                Ok(Some(event)) => mapping::thread_events(&event),
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Err(status(e))).await;
                    return;
                }
            },
            notice = engine_events.recv(), if engine_open => match notice {
                Some(EngineEventNotice::Event(event)) => {
                    replaying_from = None;
                    if concerns(&scope, event.thread_id.as_ref()) {
                        vec![mapping::engine_event(&event)]
                    } else {
                        Vec::new()
                    }
                }
                Some(EngineEventNotice::Lagged { resume_from }) => match replaying_from.take() {
                    // The replay starts later than asked: those are gone.
                    Some(asked) => vec![mapping::engine_events_missed(resume_from.saturating_sub(asked), now_ms())],
                    None => {
                        engine_events = engine.feeds().engine_events_from(resume_from);
                        replaying_from = Some(resume_from);
                        Vec::new()
                    }
                },
                None => {
                    engine_open = false;
                    Vec::new()
                }
            },
        };
        for event in events.into_iter().filter(|e| wanted.wants(e.r#type)) {
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
    }
}

/// Whether an engine-wide event about `thread` (or no thread) belongs in
/// the scope: all of them for every session, a session's own otherwise.
fn concerns(scope: &Scope, thread: Option<&gantry_types::ThreadId>) -> bool {
    match scope {
        Scope::All => true,
        Scope::One(id) => thread == Some(id),
    }
}

/// Now, in ms since the Unix epoch (for events the stream makes itself).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
