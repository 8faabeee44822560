//! One turn as an NDJSON stream: `turn_start`, `session_init` (ordinary
//! turns), the mapper's content and terminal message, `turn_end`. The
//! turn runs in a task of its own holding its session's slot, so a client
//! that goes away mid-turn interrupts it (nobody would read the rest) and
//! the next turn of the session waits for the end of this one either way.

use std::time::{Duration, Instant};

use bytes::Bytes;
use gantry_core::{Engine, ThreadFeed};
use gantry_types::{ThreadId, TurnId};
use tokio::sync::mpsc;

use crate::mapper::TurnMapper;
use crate::wire::{Accounting, EndStatus, Message};

/// Lines waiting for a slow client before the turn waits for it.
pub(crate) const STREAM_CAPACITY: usize = 64;

/// A blank line this often while nothing else is sent: idle HTTP clients
/// (Node's fetch gives up after 300 s without a byte) keep the stream.
const HEARTBEAT: Duration = Duration::from_secs(15);

/// Where a turn's lines go.
pub(crate) struct Outlet {
    tx: mpsc::Sender<Bytes>,
    started: Instant,
}

/// The client went away.
pub(crate) struct Gone;

impl Outlet {
    /// A stream and the receiver its HTTP body reads.
    pub(crate) fn new() -> (Self, mpsc::Receiver<Bytes>) {
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        let outlet = Self {
            tx,
            started: Instant::now(),
        };
        (outlet, rx)
    }

    /// Whether the client is gone already.
    pub(crate) fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Restarts the turn's clock (once it may run).
    pub(crate) fn start_clock(&mut self) {
        self.started = Instant::now();
    }

    /// Sends one message as a line.
    pub(crate) async fn send(&self, message: &Message) -> Result<(), Gone> {
        let mut line = serde_json::to_vec(message).map_err(|_| Gone)?;
        line.push(b'\n');
        self.tx.send(Bytes::from(line)).await.map_err(|_| Gone)
    }

    /// Sends `turn_end`.
    pub(crate) async fn end(&self, turn: &TurnId, status: EndStatus) {
        let duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let _ = self
            .send(&Message::TurnEnd {
                turn_id: turn.to_string(),
                status,
                duration_ms,
            })
            .await;
    }

    /// A turn that could not start: its bracket around the reason.
    pub(crate) async fn refused(&self, session: &ThreadId, user_prompt: &str, error: String) {
        let turn = TurnId::new();
        let start = Message::TurnStart {
            turn_id: turn.to_string(),
            session_id: session.to_string(),
            user_prompt: user_prompt.to_owned(),
        };
        let error = Message::Error {
            error,
            accounting: Accounting::default(),
        };
        if self.send(&start).await.is_ok() && self.send(&error).await.is_ok() {
            self.end(&turn, EndStatus::Error).await;
        }
    }
}

/// Streams the running `turn` of `thread` from `feed` until it ends, or
/// interrupts it when the client goes away.
pub(crate) async fn follow(
    engine: &Engine,
    thread: &ThreadId,
    turn: &TurnId,
    mut feed: ThreadFeed,
    mut mapper: TurnMapper,
    outlet: &Outlet,
) {
    let mut heartbeat =
        tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    loop {
        let notification = tokio::select! {
            n = feed.next() => n,
            () = outlet.tx.closed() => return interrupt(engine, thread).await,
            _ = heartbeat.tick() => {
                // A full channel means bytes are flowing anyway.
                let _ = outlet.tx.try_send(Bytes::from_static(b"\n"));
                continue;
            }
        };
        let notification = match notification {
            Ok(Some(n)) => n,
            // The engine stops: its running turns end interrupted.
            Ok(None) => return outlet.end(turn, EndStatus::Interrupted).await,
            Err(e) => {
                tracing::warn!(error = %e, %thread, "a Rome turn stream lost its feed");
                let error = Message::Error {
                    error: format!("the turn's events could not be followed: {e}"),
                    accounting: Accounting::default(),
                };
                let _ = outlet.send(&error).await;
                return outlet.end(turn, EndStatus::Error).await;
            }
        };
        let (messages, ended) = mapper.on(&notification);
        for message in &messages {
            if outlet.send(message).await.is_err() {
                return interrupt(engine, thread).await;
            }
        }
        if let Some(ended) = ended {
            return outlet.end(turn, ended.status).await;
        }
    }
}

async fn interrupt(engine: &Engine, thread: &ThreadId) {
    if let Err(e) = engine.turns().interrupt(thread).await {
        tracing::warn!(error = %e, %thread, "cannot interrupt the turn of a Rome client that went away");
    }
}
