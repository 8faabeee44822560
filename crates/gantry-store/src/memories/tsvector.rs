//! PostgreSQL full-text values built from our own tokens ([`super::tokens`]):
//! a memory's `tsvector` and a query's `tsquery`, as the text PostgreSQL
//! casts (`$1::tsvector`). Building them here, rather than with
//! `to_tsvector()`, keeps the words exactly those SQLite's FTS5 and the
//! in-memory store see: PostgreSQL's parser would read `a@b.com` or
//! `state-of-the-art` as words of their own.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::tokens::tokens;

/// PostgreSQL's longest lexeme, in bytes (a longer word cannot be indexed).
const MAX_LEXEME: usize = 2047;
/// PostgreSQL's largest word position; later words share it.
const MAX_POSITION: usize = 16_383;
/// PostgreSQL keeps at most this many positions of one lexeme.
const MAX_POSITIONS: usize = 255;
/// PostgreSQL's limit on a tsvector's lexeme bytes (1 MiB), with room to spare.
const MAX_LEXEME_BYTES: usize = 1_000_000;

/// The `tsvector` text of a memory: the tokens of its content, then of its
/// tags, each with its positions (so `ts_rank` counts how often a word occurs).
pub(crate) fn document(content: &str, tags: &[String]) -> String {
    let mut lexemes: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut bytes = 0;
    let words = tokens(content).chain(tags.iter().flat_map(|t| tokens(t)));
    for (index, word) in words.enumerate() {
        if word.len() > MAX_LEXEME {
            continue;
        }
        let position = (index + 1).min(MAX_POSITION);
        match lexemes.get_mut(&word) {
            Some(positions)
                if positions.len() < MAX_POSITIONS && positions.last() != Some(&position) =>
            {
                positions.push(position);
            }
            Some(_) => {}
            None if bytes + word.len() <= MAX_LEXEME_BYTES => {
                bytes += word.len();
                lexemes.insert(word, vec![position]);
            }
            None => {}
        }
    }
    let mut text = String::new();
    for (lexeme, positions) in &lexemes {
        if !text.is_empty() {
            text.push(' ');
        }
        quote(&mut text, lexeme);
        text.push(':');
        for (i, position) in positions.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            let _ = write!(text, "{position}");
        }
    }
    text
}

/// The `tsquery` text matching a document that holds any of `terms`
/// (query terms: already tokens). Terms too long to be stored are left out;
/// `None` when none is left, so nothing can match.
pub(crate) fn any(terms: &[String]) -> Option<String> {
    let mut text = String::new();
    for term in terms
        .iter()
        .filter(|t| !t.is_empty() && t.len() <= MAX_LEXEME)
    {
        if !text.is_empty() {
            text.push_str(" | ");
        }
        quote(&mut text, term);
    }
    (!text.is_empty()).then_some(text)
}

/// `'word'`, a quote or backslash in it doubled, as both types' input wants.
fn quote(text: &mut String, word: &str) {
    text.push('\'');
    for c in word.chars() {
        if matches!(c, '\'' | '\\') {
            text.push(c);
        }
        text.push(c);
    }
    text.push('\'');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_list_each_word_once_with_its_positions() {
        let tags = vec!["deploy".to_owned()];
        assert_eq!(
            document("Deploy: run make-deploy, über!", &tags),
            "'deploy':1,4,6 'make':3 'run':2 'über':5"
        );
        assert_eq!(document("", &[]), "");
    }

    #[test]
    fn limits_are_kept() {
        let long = "x".repeat(MAX_LEXEME + 1);
        assert_eq!(document(&format!("{long} ok"), &[]), "'ok':2");
        let many = "a ".repeat(20_000);
        let doc = document(&many, &[]);
        assert_eq!(doc.matches(',').count(), MAX_POSITIONS - 1);
        assert_eq!(any(&[long]), None);
    }

    #[test]
    fn queries_are_quoted_alternatives() {
        let terms = vec!["deploy".to_owned(), "it's".to_owned()];
        assert_eq!(any(&terms).as_deref(), Some("'deploy' | 'it''s'"));
        assert_eq!(any(&[]), None);
    }
}
