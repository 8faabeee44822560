//! The `*` patterns of shell rules and tool names.

/// `mcp__server__tool` matches itself; `*` is a wildcard; `mcp__server`
/// matches every tool of that server.
pub(super) fn tool_name_matches(pattern: &str, name: &str) -> bool {
    if glob_matches(pattern, name) {
        return true;
    }
    pattern
        .strip_prefix("mcp__")
        .is_some_and(|server| !server.contains("__"))
        && name
            .strip_prefix(pattern)
            .is_some_and(|rest| rest.starts_with("__"))
}

/// `*` matches any text (spaces included); everything else is literal. A
/// pattern ending in ` *` also matches without that last word, so that
/// `npm run test *` covers plain `npm run test`.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    if let Some(head) = pattern.strip_suffix(" *")
        && !head.contains('*')
        && head == text
    {
        return true;
    }
    wildcard(pattern.as_bytes(), text.as_bytes())
}

/// Iterative `*`-only wildcard match (linear backtracking on the last star).
fn wildcard(p: &[u8], t: &[u8]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}
