//! The LSP base protocol: JSON-RPC messages framed by a `Content-Length`
//! header, over a server's stdin/stdout.

use std::io;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A message larger than this is refused rather than buffered: a server
/// that sends one is broken, and the cap keeps it from exhausting memory.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Reads the next message; `Ok(None)` at a clean end of stream.
pub(crate) async fn read_message<R: AsyncBufRead + Unpin>(
    reader: &mut R,
) -> io::Result<Option<Value>> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    let mut saw_header = false;
    loop {
        line.clear();
        if reader.read_line(&mut line).await? == 0 {
            return if saw_header {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a message header",
                ))
            } else {
                Ok(None)
            };
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if saw_header {
                break;
            }
            // Stray blank lines between messages are harmless.
            continue;
        }
        saw_header = true;
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad Content-Length header: {header:?}"),
                )
            })?);
        }
    }
    let length = length.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a message header has no Content-Length",
        )
    })?;
    if length > MAX_MESSAGE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a message of {length} bytes is larger than the {MAX_MESSAGE_BYTES} allowed"),
        ));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("bad JSON message: {e}")))
}

/// Writes one message and flushes it.
pub(crate) async fn write_message<W: AsyncWrite + Unpin>(
    writer: &mut W,
    message: &Value,
) -> io::Result<()> {
    let body = serde_json::to_vec(message)?;
    let header = format!("Content-Length: {}\r\n\r\n", body.len());
    writer.write_all(header.as_bytes()).await?;
    writer.write_all(&body).await?;
    writer.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::BufReader;

    #[tokio::test]
    async fn a_written_message_reads_back_and_the_stream_ends_cleanly() {
        let mut buf = Vec::new();
        write_message(&mut buf, &json!({"jsonrpc": "2.0", "id": 1, "result": "é"}))
            .await
            .unwrap();
        write_message(&mut buf, &json!({"jsonrpc": "2.0", "method": "m"}))
            .await
            .unwrap();
        let mut reader = BufReader::new(&buf[..]);
        let first = read_message(&mut reader).await.unwrap().unwrap();
        assert_eq!(first["result"], "é");
        let second = read_message(&mut reader).await.unwrap().unwrap();
        assert_eq!(second["method"], "m");
        assert!(read_message(&mut reader).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn other_headers_are_ignored_and_broken_frames_are_errors() {
        let raw = b"Content-Type: application/vscode-jsonrpc\r\ncontent-length: 2\r\n\r\n{}";
        let mut reader = BufReader::new(&raw[..]);
        assert_eq!(read_message(&mut reader).await.unwrap(), Some(json!({})));

        let mut reader = BufReader::new(&b"Content-Type: x\r\n\r\n{}"[..]);
        assert!(read_message(&mut reader).await.is_err());
        let mut reader = BufReader::new(&b"Content-Length: 10\r\n\r\n{}"[..]);
        assert!(read_message(&mut reader).await.is_err());
    }
}
