//! ACP over stdio: newline-delimited JSON-RPC 2.0 in, answers, requests
//! and notifications out, one JSON object a line and nothing else (logs
//! go to stderr). Requests run concurrently, so a permission is answered
//! and a cancel arrives while a prompt waits; the client's answers to the
//! agent's own requests go back to whoever asked.

use std::sync::Arc;

use gantry_core::{Engine, Line, Lines};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::AcpOptions;
use crate::rpc::{Incoming, Peer, read};
use crate::session::{Agent, call, notified};

/// Lines waiting for stdout; past this the agent waits for the client to
/// read (back-pressure, never dropped lines).
const OUT_CAPACITY: usize = 1024;

/// The longest line read: a prompt with the most images a message takes.
const MAX_LINE: usize = gantry_types::MAX_MESSAGE_BODY;

/// What a longer line is answered with (-32700).
const TOO_LONG: &str = "the line is longer than the largest message (8 images of 5 MiB)";

/// Serves ACP from `input` on `output` until the end of `input` (then
/// running prompts are cancelled and answered first).
pub async fn serve_stdio<R, W>(
    engine: Engine,
    options: AcpOptions,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, rx) = mpsc::channel::<String>(OUT_CAPACITY);
    let writer = tokio::spawn(write_lines(output, rx));
    let peer = Peer::new(out);
    let tools = options.client_tools.clone();
    let agent = Arc::new(Agent::new(engine, options, peer.clone()));
    if let Some(tools) = tools {
        tools.attach(&agent);
    }
    let mut tasks = JoinSet::new();
    // Lines as bytes, bounded: one that is not UTF-8 or too long is
    // answered, not the end.
    let mut lines = Lines::new(BufReader::new(input), MAX_LINE);
    while let Some(line) = lines.next_line().await? {
        // Finished requests leave the set.
        while tasks.try_join_next().is_some() {}
        let line = match line {
            Line::Bytes(line) => String::from_utf8(line).map_err(|_| "the line is not UTF-8"),
            Line::TooLong => Err(TOO_LONG),
        };
        let line = match line {
            Ok(line) => line,
            Err(why) => {
                let parse = crate::rpc::RpcError::parse(why);
                peer.answer(&serde_json::Value::Null, Err(parse)).await;
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match read(&line) {
            Err((id, e)) => peer.answer(&id, Err(e)).await,
            Ok(Incoming::Response { id, result }) => peer.answered(&id, result),
            Ok(Incoming::Request { id, method, params }) => {
                let agent = agent.clone();
                tasks.spawn(async move {
                    let result = call(&agent, &method, params).await;
                    agent.peer.answer(&id, result).await;
                });
            }
            Ok(Incoming::Notification { method, params }) => {
                let agent = agent.clone();
                tasks.spawn(async move { notified(&agent, &method, params).await });
            }
        }
    }
    // The client is gone: nobody answers the agent's requests any more,
    // and running turns stop.
    peer.close();
    agent.interrupt_all().await;
    while tasks.join_next().await.is_some() {}
    drop(agent);
    drop(peer);
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
