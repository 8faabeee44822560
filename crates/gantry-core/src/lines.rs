//! Newline-delimited input in bounded memory, as the stdio adapters read
//! it: a line longer than the bound is skipped to its end as it arrives
//! (never buffered whole), and reported, so the adapter answers it and
//! reads on.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line of input, without its newline.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line's bytes (not checked to be UTF-8).
    Bytes(Vec<u8>),
    /// The line was longer than the bound: its bytes are dropped.
    TooLong,
}

/// Reads `input` a line at a time, holding at most `max` bytes of a line.
#[derive(Debug)]
pub struct Lines<R> {
    input: R,
    max: usize,
    /// The line read so far (kept here, so a cancelled read loses nothing).
    line: Vec<u8>,
    too_long: bool,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    /// Lines of `input` of at most `max` bytes each.
    pub fn new(input: R, max: usize) -> Self {
        Self {
            input,
            max,
            line: Vec::new(),
            too_long: false,
        }
    }

    /// The next line; `None` at the end of input. A last line without a
    /// newline is a line. Cancel-safe.
    pub async fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        loop {
            let buf = self.input.fill_buf().await?;
            if buf.is_empty() {
                if self.too_long || !self.line.is_empty() {
                    return Ok(Some(self.take()));
                }
                return Ok(None);
            }
            let newline = buf.iter().position(|b| *b == b'\n');
            let chunk = &buf[..newline.unwrap_or(buf.len())];
            if !self.too_long {
                if self.line.len() + chunk.len() > self.max {
                    self.too_long = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = newline.map_or(buf.len(), |at| at + 1);
            self.input.consume(used);
            if newline.is_some() {
                return Ok(Some(self.take()));
            }
        }
    }

    fn take(&mut self) -> Line {
        if std::mem::take(&mut self.too_long) {
            self.line = Vec::new();
            Line::TooLong
        } else {
            Line::Bytes(std::mem::take(&mut self.line))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Line, Lines};

    async fn all(input: &[u8], max: usize) -> Vec<Line> {
        // A small buffer: lines arrive in pieces, as from a pipe.
        let reader = tokio::io::BufReader::with_capacity(3, input);
        let mut lines = Lines::new(reader, max);
        let mut all = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            all.push(line);
        }
        all
    }

    fn bytes(text: &str) -> Line {
        Line::Bytes(text.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn lines_past_the_bound_are_reported_and_the_next_read_whole() {
        let got = all(b"short\nmuch too long a line\n\nlast", 10).await;
        assert_eq!(
            got,
            [bytes("short"), Line::TooLong, bytes(""), bytes("last")]
        );
        assert_eq!(all(b"0123456789\n", 10).await, [bytes("0123456789")]);
        assert_eq!(all(b"0123456789x", 10).await, [Line::TooLong]);
        assert_eq!(all(b"", 10).await, []);
    }
}
