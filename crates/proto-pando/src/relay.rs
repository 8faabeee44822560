//! The instance's public ports, in front of its sockets. The `zeromq`
//! crate takes a frame's declared length at its word and reserves that
//! much before the bytes come: one long-frame header declaring 2^40 bytes
//! would abort `gantry serve`, every listener and turn with it. So clients
//! never reach the sockets directly: each connection to a public port is
//! relayed to the socket's private Unix socket through [`Frames`], which
//! reads each ZMTP frame header as it passes and ends the connection whose
//! frame declares more than [`MAX_FRAME`], before anything is allocated
//! for it. Answers flow back unchecked: they are ours.

use std::path::{Path, PathBuf};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixStream};
use tokio_util::sync::CancellationToken;

/// The largest frame a client may send: a JSON-RPC request is a few
/// kilobytes; 16 MiB leaves room for a prompt with pasted files.
pub const MAX_FRAME: u64 = 16 * 1024 * 1024;

/// ZMTP 3's greeting: signature, version, mechanism, as-server, filler.
const GREETING: u64 = 64;

/// Where a client's byte stream is in ZMTP's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// In the greeting, this many bytes to go.
    Greeting(u64),
    /// Next comes a frame's flags byte.
    Flags,
    /// In a length: its bytes to go and the value so far.
    Length { to_go: u8, value: u64 },
    /// In a frame's body, this many bytes to go.
    Body(u64),
}

/// Follows the frames of a client's byte stream, refusing an oversized one.
#[derive(Debug)]
pub(crate) struct Frames {
    state: State,
}

/// A frame longer than [`MAX_FRAME`] was declared.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Oversized(pub u64);

impl Frames {
    /// At the start of a connection.
    pub(crate) fn new() -> Self {
        Self {
            state: State::Greeting(GREETING),
        }
    }

    /// Takes the next bytes of the stream (any split of it).
    pub(crate) fn check(&mut self, mut bytes: &[u8]) -> Result<(), Oversized> {
        while let Some((&first, rest)) = bytes.split_first() {
            match self.state {
                State::Greeting(to_go) | State::Body(to_go) => {
                    let len = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
                    let take = to_go.min(len);
                    // `take` <= bytes.len(), so it fits a usize.
                    bytes = &bytes[usize::try_from(take).unwrap_or(bytes.len())..];
                    let left = to_go - take;
                    self.state = match self.state {
                        State::Greeting(_) if left > 0 => State::Greeting(left),
                        State::Body(_) if left > 0 => State::Body(left),
                        _ => State::Flags,
                    };
                }
                State::Flags => {
                    let long = first & 0b10 != 0;
                    self.state = State::Length {
                        to_go: if long { 8 } else { 1 },
                        value: 0,
                    };
                    bytes = rest;
                }
                State::Length { to_go, value } => {
                    let value = (value << 8) | u64::from(first);
                    bytes = rest;
                    self.state = if to_go > 1 {
                        State::Length {
                            to_go: to_go - 1,
                            value,
                        }
                    } else if value > MAX_FRAME {
                        return Err(Oversized(value));
                    } else if value == 0 {
                        State::Flags
                    } else {
                        State::Body(value)
                    };
                }
            }
        }
        Ok(())
    }
}

/// Relays connections to `public` to the Unix socket `inner` until `stop`.
pub(crate) async fn serve(public: TcpListener, inner: PathBuf, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = public.accept() => accepted,
        };
        match accepted {
            Ok((client, _)) => {
                let inner = inner.clone();
                tokio::spawn(async move {
                    if let Err(e) = relay(client, &inner).await {
                        tracing::debug!(error = %e, "Pando connection ended");
                    }
                });
            }
            Err(e) => {
                // Out of descriptors, say: the listener itself is fine.
                tracing::warn!(error = %e, "cannot accept a Pando connection");
                tokio::task::yield_now().await;
            }
        }
    }
}

/// One client's connection, until either side closes it or the client
/// declares an oversized frame.
async fn relay(client: TcpStream, inner: &Path) -> std::io::Result<()> {
    // Frames are small and each matters now: no Nagle delay.
    client.set_nodelay(true)?;
    let socket = UnixStream::connect(inner).await?;
    let (from_client, mut to_client) = client.into_split();
    let (mut from_socket, to_socket) = socket.into_split();
    let upstream = checked_copy(from_client, to_socket);
    let downstream = tokio::io::copy(&mut from_socket, &mut to_client);
    // Whichever way ends first ends the connection: dropping both halves
    // closes it for the client and for the socket.
    tokio::select! {
        up = upstream => up,
        down = downstream => down.map(drop),
    }
}

/// Copies a client's bytes to the socket, checking its frames on the way.
async fn checked_copy(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    let mut frames = Frames::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        let chunk = &buf[..n];
        frames.check(chunk).map_err(|Oversized(len)| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a frame of {len} bytes (at most {MAX_FRAME})"),
            )
        })?;
        to.write_all(chunk).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A greeting, then frames as ZMTP writes them.
    fn stream(frames: &[(u8, &[u8])]) -> Vec<u8> {
        let mut out = vec![0u8; 64];
        for (flags, body) in frames {
            let len = body.len() as u64;
            if len > 255 {
                out.push(flags | 0b10);
                out.extend_from_slice(&len.to_be_bytes());
            } else {
                out.push(*flags);
                out.push(len as u8);
            }
            out.extend_from_slice(body);
        }
        out
    }

    #[test]
    fn frames_of_any_size_up_to_the_cap_pass_however_the_stream_is_split() {
        let big = vec![7u8; 70_000];
        let bytes = stream(&[(0b100, b"\x05READY"), (0b1, b""), (0, b"{}"), (0, &big)]);
        for split in [1, 2, 7, 63, 64, 65, 4096, bytes.len()] {
            let mut frames = Frames::new();
            for chunk in bytes.chunks(split) {
                assert_eq!(frames.check(chunk), Ok(()), "split {split}");
            }
            assert_eq!(frames.state, State::Flags, "split {split}");
        }
    }

    #[test]
    fn a_declared_length_past_the_cap_is_refused_before_its_body() {
        let mut bytes = stream(&[(0, b"{}")]);
        bytes.push(0b10);
        bytes.extend_from_slice(&(1u64 << 40).to_be_bytes());
        for split in [1, 3, bytes.len()] {
            let mut frames = Frames::new();
            let result: Result<(), Oversized> =
                bytes.chunks(split).try_for_each(|c| frames.check(c));
            assert_eq!(result, Err(Oversized(1 << 40)), "split {split}");
        }
        let mut frames = Frames::new();
        let mut at_cap = stream(&[]);
        at_cap.push(0b10);
        at_cap.extend_from_slice(&MAX_FRAME.to_be_bytes());
        assert_eq!(frames.check(&at_cap), Ok(()));
        let mut frames = Frames::new();
        let mut past = stream(&[]);
        past.push(0b110);
        past.extend_from_slice(&(MAX_FRAME + 1).to_be_bytes());
        assert_eq!(frames.check(&past), Err(Oversized(MAX_FRAME + 1)));
    }
}
