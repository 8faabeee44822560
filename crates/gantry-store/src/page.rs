//! Listing rules shared by every store: page size and cursor validation.

use crate::StoreError;

/// Page size when the query asks for 0.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// Largest page size; bigger requests are clamped.
pub const MAX_PAGE_SIZE: usize = 1000;
/// Longest cursor accepted; thread ids are 36-character UUIDs.
const MAX_CURSOR_LEN: usize = 128;

/// The effective page size of a requested `limit`.
pub(crate) fn page_limit(limit: usize) -> usize {
    match limit {
        0 => DEFAULT_PAGE_SIZE,
        n => n.min(MAX_PAGE_SIZE),
    }
}

/// Checks a cursor handed back by a caller. A cursor is the id of the last
/// thread of the previous page; ids are UUIDs or, for threads named by a
/// client, short tokens, so anything else is not one of ours.
pub(crate) fn check_cursor(cursor: &str) -> Result<&str, StoreError> {
    let ok = !cursor.is_empty()
        && cursor.len() <= MAX_CURSOR_LEN
        && cursor
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if ok {
        Ok(cursor)
    } else {
        Err(StoreError::BadCursor(cursor.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(page_limit(0), DEFAULT_PAGE_SIZE);
        assert_eq!(page_limit(3), 3);
        assert_eq!(page_limit(1_000_000), MAX_PAGE_SIZE);
    }

    #[test]
    fn cursors() {
        assert!(check_cursor("01890a5d-ac96-774b-bcce-b302099a8057").is_ok());
        assert!(check_cursor("").is_err());
        assert!(check_cursor("not a cursor").is_err());
        assert!(check_cursor("x';DROP TABLE threads;--").is_err());
        assert!(check_cursor(&"a".repeat(200)).is_err());
    }
}
