//! A client terminal's output as it grows: `terminal/output` answers with
//! everything so far (capped by the client, which then drops the start),
//! and the engine's command output deltas want only what is new.

/// How far a terminal's output has been passed on.
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    /// The output as of the last answer.
    seen: String,
}

/// The end of the output already seen that locates it again in an output
/// whose start the client cut.
const ANCHOR: usize = 256;

impl Streamed {
    /// What `output` (the whole output now) adds to what was seen, if
    /// anything.
    pub(crate) fn next(&mut self, output: &str) -> Option<String> {
        let new = match output.strip_prefix(self.seen.as_str()) {
            Some(rest) => rest.to_owned(),
            // The client cut the start: find where the last answer ended.
            None => {
                let mut at = self.seen.len().saturating_sub(ANCHOR);
                while !self.seen.is_char_boundary(at) {
                    at += 1;
                }
                let anchor = &self.seen[at..];
                match output.rfind(anchor) {
                    Some(found) if !anchor.is_empty() => output[found + anchor.len()..].to_owned(),
                    // Nothing to go by: only what comes next is new.
                    _ => String::new(),
                }
            }
        };
        output.clone_into(&mut self.seen);
        (!new.is_empty()).then_some(new)
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
        assert_eq!(s.next("e\ntwo\nthree\n").as_deref(), Some("three\n"));
        assert_eq!(s.next("completely different"), None);
        assert_eq!(s.next("completely different!").as_deref(), Some("!"));
    }
}
