//! CodeWhale over stdio: newline-delimited JSON-RPC 2.0 in, answers and
//! notifications out, one JSON object a line and nothing else (logs go to
//! stderr). Requests run concurrently, so an approval can be answered
//! while a prompt waits for it. 0.8.59 (`methods.rs`): while a turn a
//! `thread/message` started runs, its frames go out as `event`
//! notifications (`params`: `thread_id`, `id` to resume after, `frame`);
//! MCP startup progress goes out the same way without a thread. 0.10
//! (`v0_10.rs`): a message is answered when its turn ends, its frames
//! written before as lines of their own (`{"type": "response_delta", ...}`).

mod methods;
mod rpc;
mod v0_10;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use gantry_core::{EngineEventNotice, Line, Lines};
use gantry_types::ThreadId;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::frames::{FrameFeed, ResumePoint, engine_frame};
use crate::{CodeWhale, Version};

/// Lines waiting for stdout; past this the session stops reading frames
/// until the client reads (back-pressure, never dropped lines).
const OUT_CAPACITY: usize = 1024;

/// The longest line read: a message with the most images it may take.
const MAX_LINE: usize = gantry_types::MAX_MESSAGE_BODY;

/// What a longer line is answered with (-32700).
const TOO_LONG: &str = "the line is longer than the largest message (8 images of 5 MiB)";

/// Serves CodeWhale `version`'s JSON-RPC lines from `input` on `output`
/// until `shutdown` or the end of `input` (then requests still running
/// are answered first).
pub async fn serve_stdio<R, W>(
    cw: CodeWhale,
    version: Version,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, rx) = mpsc::channel::<String>(OUT_CAPACITY);
    let writer = tokio::spawn(write_lines(output, rx));
    // Ends the followers of threads and of MCP startup with the session.
    let session = CancellationToken::new();
    let followed: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut requests = JoinSet::new();
    // 0.10's stdio sends no notifications.
    if version == Version::V0_8 {
        tokio::spawn(
            session
                .clone()
                .run_until_cancelled_owned(forward_mcp(cw.clone(), out.clone())),
        );
    }
    // Lines as bytes, bounded: one that is not UTF-8 or too long is
    // answered, not the end.
    let mut lines = Lines::new(BufReader::new(input), MAX_LINE);
    let (exit_tx, mut exit_rx) = mpsc::channel::<()>(1);
    loop {
        // Answered requests leave the set.
        while requests.try_join_next().is_some() {}
        let line = tokio::select! {
            line = lines.next_line() => line?,
            _ = exit_rx.recv() => break,
        };
        let Some(line) = line else {
            // End of input: answer what was asked, then stop.
            while requests.join_next().await.is_some() {}
            break;
        };
        let line = match line {
            Line::Bytes(line) => String::from_utf8(line).map_err(|_| "the line is not UTF-8"),
            Line::TooLong => Err(TOO_LONG),
        };
        let line = match line {
            Ok(line) => line,
            Err(why) => {
                let parse = rpc::RpcError::parse(why);
                let _ = out.send(rpc::error(serde_json::Value::Null, parse)).await;
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let request = match rpc::read(&line) {
            Ok(request) => request,
            Err((id, e)) => {
                let _ = out.send(rpc::error(id, e)).await;
                continue;
            }
        };
        let cw = cw.clone();
        let out = out.clone();
        let exit = exit_tx.clone();
        let followed = followed.clone();
        let session = session.clone();
        requests.spawn(async move {
            let called = match version {
                Version::V0_8 => methods::call(&cw, &request.method, request.params).await,
                Version::V0_10 => v0_10::call(&cw, &request.method, request.params, &out).await,
            };
            match called {
                Ok(outcome) => {
                    let _ = out.send(rpc::result(request.id, outcome.result)).await;
                    // The follower starts after the answer is queued, so
                    // the answer comes before the turn's frames.
                    if let Some((thread, after_seq)) = outcome.follow {
                        let first = followed
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .insert(thread.clone());
                        if first {
                            let follow = follow_thread(cw, thread, after_seq, out);
                            tokio::spawn(session.run_until_cancelled_owned(follow));
                        }
                    }
                    if outcome.exit {
                        let _ = exit.send(()).await;
                    }
                }
                Err(e) => {
                    let _ = out.send(rpc::error(request.id, e)).await;
                }
            }
        });
    }
    requests.abort_all();
    session.cancel();
    drop(out);
    writer.await.unwrap_or(Ok(()))
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut rx: mpsc::Receiver<String>,
) -> std::io::Result<()> {
    while let Some(line) = rx.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        // A client waits for each line: write it now.
        output.flush().await?;
    }
    Ok(())
}

/// Sends `thread`'s frames after `after_seq` as notifications.
async fn follow_thread(cw: CodeWhale, thread: String, after_seq: u64, out: mpsc::Sender<String>) {
    let from = ResumePoint::after(after_seq);
    let mut feed = match FrameFeed::open(cw.engine(), &ThreadId(thread.clone()), from).await {
        Ok(feed) => feed,
        Err(e) => {
            tracing::warn!(error = %e, thread, "cannot follow a thread's frames");
            return;
        }
    };
    while let Ok(Some(batch)) = feed.next().await {
        for framed in batch {
            let id = framed.position.encode();
            let frame = serde_json::to_value(&framed.frame).unwrap_or_default();
            if out
                .send(rpc::event(Some(&thread), Some(id), frame))
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Sends MCP startup progress as notifications.
async fn forward_mcp(cw: CodeWhale, out: mpsc::Sender<String>) {
    let mut events = cw.engine().feeds().engine_events();
    while let Some(notice) = events.recv().await {
        let EngineEventNotice::Event(event) = notice else {
            continue;
        };
        let Some(frame) = engine_frame(event.kind) else {
            continue;
        };
        let frame = serde_json::to_value(&frame).unwrap_or_default();
        if out.send(rpc::event(None, None, frame)).await.is_err() {
            return;
        }
    }
}
