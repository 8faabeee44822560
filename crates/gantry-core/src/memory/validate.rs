//! Checks and normalisation of what clients and the model send: each
//! refusal says what to change.

use gantry_types::memory::MemoryId;

use crate::EngineError;

/// Longest memory content, in bytes: a memory is a note, not a document.
pub(super) const MAX_CONTENT_BYTES: usize = 32 * 1024;
/// Most tags on one memory (or in one search).
pub(super) const MAX_TAGS: usize = 32;
/// Longest tag, in characters.
pub(super) const MAX_TAG_CHARS: usize = 64;
/// Longest client-chosen memory id.
const MAX_ID_LEN: usize = 128;

/// Content that is not blank and not too long.
pub(super) fn content(content: String) -> Result<String, EngineError> {
    if content.trim().is_empty() {
        return Err(EngineError::InvalidInput(
            "the memory's content is empty: say what to remember".to_owned(),
        ));
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(EngineError::InvalidInput(format!(
            "the memory's content is {} bytes; keep it under {MAX_CONTENT_BYTES} \
             (store a summary, or split it)",
            content.len()
        )));
    }
    Ok(content)
}

/// Search text that is not too long (blank text is no text).
pub(super) fn query(query: Option<String>) -> Result<Option<String>, EngineError> {
    match query {
        Some(q) if q.len() > MAX_CONTENT_BYTES => Err(EngineError::InvalidInput(format!(
            "the search text is {} bytes; keep it under {MAX_CONTENT_BYTES}",
            q.len()
        ))),
        Some(q) if q.trim().is_empty() => Ok(None),
        other => Ok(other),
    }
}

/// A number from 0 to 1.
pub(super) fn importance(field: &str, value: f32) -> Result<f32, EngineError> {
    if (0.0..=1.0).contains(&value) {
        Ok(value)
    } else {
        Err(EngineError::InvalidInput(format!(
            "{field} must be between 0 and 1, got {value}"
        )))
    }
}

/// Tags trimmed, lowercased, without blanks or repeats, in their order.
pub(super) fn tags(tags: Vec<String>) -> Result<Vec<String>, EngineError> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for tag in tags {
        let tag = tag.trim().to_lowercase();
        if tag.is_empty() || out.contains(&tag) {
            continue;
        }
        if tag.chars().count() > MAX_TAG_CHARS {
            return Err(EngineError::InvalidInput(format!(
                "tag {tag:?} is longer than {MAX_TAG_CHARS} characters"
            )));
        }
        out.push(tag);
    }
    if out.len() > MAX_TAGS {
        return Err(EngineError::InvalidInput(format!(
            "{} tags given; use at most {MAX_TAGS}",
            out.len()
        )));
    }
    Ok(out)
}

/// A client-chosen id: letters, digits, `.`, `_`, `-`.
pub(super) fn id(id: MemoryId) -> Result<MemoryId, EngineError> {
    let s = id.as_str();
    let ok = !s.is_empty()
        && s.len() <= MAX_ID_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(id)
    } else {
        Err(EngineError::InvalidInput(format!(
            "memory id {s:?} is invalid: use 1 to {MAX_ID_LEN} letters, digits, `.`, `_` or `-`, \
             or leave it empty for a fresh one"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_normalised() {
        let got = tags(vec![" Rust ".into(), "rust".into(), "".into(), "CI".into()]).unwrap();
        assert_eq!(got, ["rust", "ci"]);
        assert!(tags(vec!["x".repeat(MAX_TAG_CHARS + 1)]).is_err());
    }

    #[test]
    fn importance_outside_zero_to_one_is_refused() {
        assert!(importance("importance", 0.0).is_ok());
        assert!(importance("importance", 1.0).is_ok());
        for bad in [-0.1, 1.01, f32::NAN, f32::INFINITY] {
            assert!(importance("importance", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ids_and_content_are_checked() {
        assert!(id(MemoryId::from("note-1.v2_a")).is_ok());
        for bad in ["", "a b", "x/y", "ü"] {
            assert!(id(MemoryId::from(bad)).is_err(), "{bad:?}");
        }
        assert!(content("  \n".into()).is_err());
        assert!(content("x".repeat(MAX_CONTENT_BYTES + 1)).is_err());
    }
}
