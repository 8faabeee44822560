//! The names MCP tools are offered to the model under.
//!
//! Rule: `mcp__<server>__<tool>`, where in both the server and the tool name
//! every character outside `[a-zA-Z0-9_-]` becomes `_` (an empty name becomes
//! `_`). Model providers accept only such names (OpenAI also caps them at 64
//! characters), so a full name longer than [`MAX_FULL_NAME`] is cut to
//! leave room for `_` and 8 hex digits of a stable hash of the original
//! `server` and `tool`; the same suffix tells apart two tools whose
//! sanitized names collide (see [`super::McpManager::tools`]).

/// Longest full name produced.
pub const MAX_FULL_NAME: usize = 64;

/// `name` with every character outside `[a-zA-Z0-9_-]` replaced by `_`.
pub fn sanitize(name: &str) -> String {
    if name.is_empty() {
        return "_".into();
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The full name of `tool` on `server`, per the module's rule.
pub fn full_name(server: &str, tool: &str) -> String {
    let name = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if name.len() <= MAX_FULL_NAME {
        name
    } else {
        with_hash_suffix(&name, server, tool)
    }
}

/// `name` cut so that `_` and the 8-hex-digit hash of `server`/`tool` fit in
/// [`MAX_FULL_NAME`]. `name` is ASCII (sanitized), so byte cuts are safe.
pub(crate) fn with_hash_suffix(name: &str, server: &str, tool: &str) -> String {
    let suffix = format!("_{:08x}", fnv1a(server, tool));
    let keep = name.len().min(MAX_FULL_NAME - suffix.len());
    format!("{}{suffix}", &name[..keep])
}

/// 32-bit FNV-1a of `server`, a NUL, and `tool`: stable across runs and
/// platforms (std's hasher is not), so a tool keeps its name.
fn fnv1a(server: &str, tool: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in server.bytes().chain([0]).chain(tool.bytes()) {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizes_and_bounds() {
        assert_eq!(
            full_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(full_name("my server", "a.b/c"), "mcp__my_server__a_b_c");
        assert_eq!(full_name("", "x"), "mcp_____x");
        let long = full_name("s", &"t".repeat(100));
        assert_eq!(long.len(), MAX_FULL_NAME);
        assert_ne!(long, full_name("s", &"t".repeat(101)));
        assert_eq!(long, full_name("s", &"t".repeat(100)));
    }
}
