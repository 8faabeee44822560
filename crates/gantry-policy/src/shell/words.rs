//! Words: their static value after quote removal, and the commands their
//! substitutions run.

use brush_parser::ast;
use brush_parser::word::WordPiece;

use super::walker::Walker;
use super::{ShellWord, WordKind};

impl Walker {
    /// Resolves a word's static value; the commands its substitutions run
    /// become parts.
    pub(super) fn word(&mut self, w: &ast::Word, depth: usize) -> ShellWord {
        match brush_parser::word::parse(&w.value, &self.options) {
            Ok(pieces) => {
                let mut text = String::new();
                let mut kind = WordKind::Literal;
                let mut glob = false;
                for (i, p) in pieces.iter().enumerate() {
                    let raw = w.value.get(p.start_index..p.end_index).unwrap_or_default();
                    let k = self.piece(&p.piece, raw, false, &mut glob, &mut text, depth);
                    kind = match (kind, k, i) {
                        (_, WordKind::Dynamic, _) | (WordKind::Dynamic, _, _) => WordKind::Dynamic,
                        (_, WordKind::Tilde, 0) => WordKind::Tilde,
                        (WordKind::Tilde, _, _) => WordKind::Tilde,
                        _ => WordKind::Literal,
                    };
                }
                if kind == WordKind::Literal {
                    ShellWord { text, kind, glob }
                } else {
                    ShellWord {
                        text: w.value.clone(),
                        kind,
                        glob,
                    }
                }
            }
            Err(e) => {
                self.opaque(format!("word not understood: {e}"));
                ShellWord {
                    text: w.value.clone(),
                    kind: WordKind::Dynamic,
                    glob: false,
                }
            }
        }
    }

    /// Appends a word piece's static value to `text`; returns its kind.
    #[allow(clippy::too_many_arguments)]
    fn piece(
        &mut self,
        piece: &WordPiece,
        raw: &str,
        quoted: bool,
        glob: &mut bool,
        text: &mut String,
        depth: usize,
    ) -> WordKind {
        match piece {
            WordPiece::Text(s) if !quoted => {
                // `{rm,-rf,/}` expands to three words: not one static word.
                if is_brace_expansion(s) {
                    return WordKind::Dynamic;
                }
                *glob |= s.contains(['*', '?', '[', '(']);
                text.push_str(s);
                WordKind::Literal
            }
            WordPiece::Text(s) | WordPiece::SingleQuotedText(s) => {
                text.push_str(s);
                WordKind::Literal
            }
            WordPiece::EscapeSequence(s) => {
                let unescaped = s.strip_prefix('\\').unwrap_or(s);
                // A backslash-newline is a line continuation: nothing.
                if unescaped != "\n" {
                    text.push_str(unescaped);
                }
                WordKind::Literal
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                let mut kind = WordKind::Literal;
                for p in inner {
                    if self.piece(&p.piece, raw, true, glob, text, depth) != WordKind::Literal {
                        kind = WordKind::Dynamic;
                    }
                }
                kind
            }
            WordPiece::TildePrefix(user) => {
                text.push('~');
                text.push_str(user);
                WordKind::Tilde
            }
            // `$'\x72m'` could be decoded, but nothing needs it: dynamic.
            WordPiece::AnsiCQuotedText(_) => WordKind::Dynamic,
            WordPiece::ParameterExpansion(expr) => {
                // `${x:-$(cmd)}` keeps the default as unparsed text: any
                // nested expansion is not provable. Parameter names never
                // contain `$` or a backtick, so the debug form tells.
                let body = format!("{expr:?}");
                if body.contains('$') || body.contains('`') {
                    self.opaque(format!("nested expansion in {raw}"));
                }
                WordKind::Dynamic
            }
            WordPiece::CommandSubstitution(src) | WordPiece::BackquotedCommandSubstitution(src) => {
                self.source(src, depth + 1);
                WordKind::Dynamic
            }
            WordPiece::ArithmeticExpression(_) => {
                self.opaque(format!("arithmetic expansion {raw}"));
                WordKind::Dynamic
            }
        }
    }
}

/// Whether unquoted text holds a brace expansion (`{a,b}`, `{1..3}`).
fn is_brace_expansion(s: &str) -> bool {
    s.find('{').is_some_and(|open| {
        let rest = &s[open..];
        rest.contains('}') && (rest.contains(',') || rest.contains(".."))
    })
}
