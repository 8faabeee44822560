//! The words of a memory, split the way SQLite FTS5's `unicode61` tokenizer
//! (with `remove_diacritics 0`) splits them: runs of letters and digits,
//! case-folded. The in-memory store ranks over these tokens, and the SQLite
//! store builds its `MATCH` expression from them, so both see the same words.

/// The tokens of `text`, in order, lowercased.
pub(crate) fn tokens(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

/// Words too common to say what a query is about. A memory matches a query
/// holding any of its words, so without this list "when does the build
/// run?" would match every memory that says "the".
const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can",
    "could", "did", "do", "does", "for", "from", "had", "has", "have", "he", "her", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our",
    "she", "should", "so", "than", "that", "the", "their", "them", "then", "there", "they", "this",
    "to", "us", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will",
    "with", "would", "you", "your",
];

/// The distinct tokens of a query, in order of first appearance, without
/// stop words (unless the query is nothing but stop words).
pub(crate) fn query_terms(text: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for token in tokens(text) {
        if !terms.contains(&token) {
            terms.push(token);
        }
    }
    if terms.iter().all(|t| STOP_WORDS.contains(&t.as_str())) {
        return terms;
    }
    terms.retain(|t| !STOP_WORDS.contains(&t.as_str()));
    terms
}

/// An FTS5 `MATCH` expression that matches any of `terms`. Each term is a
/// quoted string, so the user's text can never be read as FTS5 syntax
/// (`AND`, `NEAR`, `*`, column filters); terms hold no quotes.
pub(crate) fn fts_any(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" OR ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_punctuation_and_folds_case() {
        let got: Vec<String> =
            tokens("Deploy: `cargo build --release`, then ÜBER-fast v2.0!").collect();
        assert_eq!(
            got,
            [
                "deploy", "cargo", "build", "release", "then", "über", "fast", "v2", "0"
            ]
        );
    }

    #[test]
    fn query_syntax_is_quoted_away() {
        let terms = query_terms("rust AND \"NEAR\" rust* OR col:x");
        assert_eq!(terms, ["rust", "near", "col", "x"]);
        assert_eq!(fts_any(&terms[..2]), "\"rust\" OR \"near\"");
    }

    #[test]
    fn stop_words_go_unless_nothing_else_is_left() {
        assert_eq!(query_terms("When does the build run?"), ["build", "run"]);
        assert_eq!(query_terms("the THE of"), ["the", "of"]);
        assert!(query_terms("?!").is_empty());
    }
}
