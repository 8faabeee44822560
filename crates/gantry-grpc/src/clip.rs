//! Client input echoed in an error message, capped: a status message
//! travels in the `grpc-message` header, and an echoed 60 KB input makes
//! the client refuse the whole answer (`RESOURCE_EXHAUSTED`) instead of
//! reading why its call failed.

use std::borrow::Cow;

use tonic::Status;

/// How many characters of a client's input an error message shows.
pub const CLIP_CHARS: usize = 200;

/// The longest status message [`bounded`] lets through, in characters:
/// room for a few clipped inputs and the hint on how to fix them.
pub const MESSAGE_CHARS: usize = 2048;

/// `input` as an error message may show it: whole when it has at most
/// [`CLIP_CHARS`] characters, else its first [`CLIP_CHARS`] and `…`.
pub fn clip(input: &str) -> Cow<'_, str> {
    clip_at(input, CLIP_CHARS)
}

/// `status` with its message cut to [`MESSAGE_CHARS`]: the backstop for
/// an echo that was not [`clip`]ped where the message was made.
pub fn bounded(status: Status) -> Status {
    match clip_at(status.message(), MESSAGE_CHARS) {
        Cow::Borrowed(_) => status,
        Cow::Owned(message) => Status::with_details_and_metadata(
            status.code(),
            message,
            status.details().to_vec().into(),
            status.metadata().clone(),
        ),
    }
}

fn clip_at(input: &str, chars: usize) -> Cow<'_, str> {
    match input.char_indices().nth(chars) {
        None => Cow::Borrowed(input),
        Some((end, _)) => Cow::Owned(format!("{}…", &input[..end])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_input_is_shown_whole_and_long_input_is_cut_on_a_char_boundary() {
        assert_eq!(clip("every day"), "every day");
        let exact = "x".repeat(CLIP_CHARS);
        assert_eq!(clip(&exact), exact);
        let long = "é".repeat(60_000);
        let shown = clip(&long);
        assert_eq!(shown.chars().count(), CLIP_CHARS + 1);
        assert!(shown.ends_with("é…"));
    }

    #[test]
    fn a_long_status_message_is_bounded_and_keeps_its_code() {
        let short = bounded(Status::not_found("session x not found"));
        assert_eq!(short.message(), "session x not found");
        let long = bounded(Status::invalid_argument("y".repeat(60_000)));
        assert_eq!(long.code(), tonic::Code::InvalidArgument);
        assert_eq!(long.message().chars().count(), MESSAGE_CHARS + 1);
    }
}
