//! A client terminal's output as it grows: `terminal/output` answers with
//! everything so far (capped by the client, which then drops the start),
//! and the engine's command output deltas want only what is new.

/// How far a terminal's output has been passed on.
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    /// The output as of the last answer.
    seen: String,
}

/// How much of the end of the output already seen is looked for in an
/// output whose start the client cut, longest first: the client may have
/// cut into the longer ones.
const ANCHORS: [usize; 3] = [256, 64, 16];

impl Streamed {
    /// What `output` (the whole output now) adds to what was seen, if
    /// anything.
    pub(crate) fn next(&mut self, output: &str) -> Option<String> {
        let new = match output.strip_prefix(self.seen.as_str()) {
            Some(rest) => rest.to_owned(),
            // The client cut the start: find where the last answer ended;
            // with nothing to go by, only what comes next is new.
            None => ANCHORS
                .iter()
                .find_map(|len| {
                    let anchor = self.tail(*len);
                    let found = output.rfind(anchor).filter(|_| !anchor.is_empty())?;
                    Some(output[found + anchor.len()..].to_owned())
                })
                .unwrap_or_default(),
        };
        output.clone_into(&mut self.seen);
        (!new.is_empty()).then_some(new)
    }

    /// The last `len` bytes seen (fewer, to start on a character).
    fn tail(&self, len: usize) -> &str {
        let mut at = self.seen.len().saturating_sub(len);
        while !self.seen.is_char_boundary(at) {
            at += 1;
        }
        &self.seen[at..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_new_output_is_passed_on_even_after_the_client_cuts_the_start() {
        let mut s = Streamed::default();
        assert_eq!(s.next(""), None);
        assert_eq!(s.next("one\n").as_deref(), Some("one\n"));
        assert_eq!(s.next("one\n"), None);
        assert_eq!(s.next("one\ntwo\n").as_deref(), Some("two\n"));
        // The client kept only the end.
        let long = format!("{}line two\n", "x".repeat(300));
        assert_eq!(s.next(&long), None, "nothing to tell where it went on");
        let cut = format!("{}line two\nthree\n", "x".repeat(10));
        assert_eq!(s.next(&cut).as_deref(), Some("three\n"));
        assert_eq!(s.next("completely different"), None);
        assert_eq!(s.next("completely different!").as_deref(), Some("!"));
    }
}
