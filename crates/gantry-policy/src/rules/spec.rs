//! A rule's parenthesised part: what it says and why it does not parse.

use globset::{GlobBuilder, GlobMatcher};

use super::{Rule, RuleTool};

/// What a rule's parenthesised part says.
#[derive(Debug, Clone)]
pub(super) enum Spec {
    /// No specifier, or `*`: every call of the tool.
    Any,
    /// `Bash(words:*)`: these words, then anything.
    Prefix(Vec<String>),
    /// `Bash(words)`: exactly these words.
    Exact(Vec<String>),
    /// `Bash(pattern with *)`.
    Glob(String),
    /// A path glob, absolute or relative to the workspace.
    Path {
        matcher: GlobMatcher,
        absolute: bool,
    },
    /// The specifier did not parse.
    Invalid,
}

/// Parses the specifier of a rule for `tool`.
pub(super) fn parse_spec(tool: &RuleTool, inner: &str) -> Spec {
    if inner.is_empty() || inner == "*" {
        return Spec::Any;
    }
    match tool {
        RuleTool::Bash => {
            if let Some(prefix) = inner.strip_suffix(":*") {
                let words: Vec<String> = prefix.split_whitespace().map(str::to_owned).collect();
                if words.is_empty() {
                    Spec::Any
                } else {
                    Spec::Prefix(words)
                }
            } else if inner.contains('*') {
                Spec::Glob(inner.split_whitespace().collect::<Vec<_>>().join(" "))
            } else {
                Spec::Exact(inner.split_whitespace().map(str::to_owned).collect())
            }
        }
        t if t.takes_path() => {
            // `~` needs the home directory, which a pure check does not know.
            if inner.starts_with('~') {
                return Spec::Invalid;
            }
            let absolute = inner.starts_with('/');
            let pattern = if let Some(rest) = inner.strip_prefix("//") {
                format!("/{rest}")
            } else {
                inner.strip_prefix("./").unwrap_or(inner).to_owned()
            };
            match GlobBuilder::new(&pattern).literal_separator(true).build() {
                Ok(glob) => Spec::Path {
                    matcher: glob.compile_matcher(),
                    absolute,
                },
                Err(_) => Spec::Invalid,
            }
        }
        _ => Spec::Invalid,
    }
}

/// Why `raw` does not parse, for a [`super::RuleError`].
pub(super) fn explain(raw: &str) -> String {
    let text = raw.trim();
    if text.is_empty() {
        return "empty rule".into();
    }
    if text.contains('(') && !text.ends_with(')') {
        return "missing closing parenthesis".into();
    }
    match Rule::parse_lenient(raw) {
        None => "tool name may only contain letters, digits, `_`, `-`, `.` and `*`".into(),
        Some(r) if r.tool.takes_path() => {
            "path specifier is not a valid glob (and `~` is not supported)".into()
        }
        Some(_) => "this tool takes no specifier".into(),
    }
}
