//! Tool names on this service: A3S's own server calls its built-in tools
//! `bash`, `read`, `write`, `edit`, `grep`, `glob` and `ls`; Gantry's engine
//! calls them `shell`, `read_file`, `write_file`, `edit_file`, `grep`, `glob`
//! and `list_dir`. Everything this service sends says A3S's name, and
//! everything it takes may say either (case does not matter: `Bash` too).
//! Other tools (MCP tools, `skill`, `todo_write`, ...) keep their names.

/// Gantry's tools and A3S's names for them.
const PAIRS: &[(&str, &str)] = &[
    ("shell", "bash"),
    ("read_file", "read"),
    ("write_file", "write"),
    ("edit_file", "edit"),
    ("list_dir", "ls"),
    ("grep", "grep"),
    ("glob", "glob"),
];

/// The name a client of this service knows the engine's tool `name` by.
pub(crate) fn wire(name: &str) -> &str {
    PAIRS
        .iter()
        .find(|(engine, _)| *engine == name)
        .map_or(name, |(_, a3s)| a3s)
}

/// The engine's name for a tool a client named `name` (A3S's or Gantry's,
/// any case for the built-in tools).
pub(crate) fn engine(name: &str) -> &str {
    let name = name.trim();
    PAIRS
        .iter()
        .find(|(engine, a3s)| name.eq_ignore_ascii_case(a3s) || name.eq_ignore_ascii_case(engine))
        .map_or(name, |(engine, _)| engine)
}

/// A3S's argument names of a built-in tool call, where they differ from
/// the engine's: A3S's file tools take `file_path`, Gantry's `path`.
pub(crate) fn engine_arguments(tool: &str, args: &mut serde_json::Value) {
    let file_tool = matches!(tool, "read_file" | "write_file" | "edit_file");
    if let (true, Some(map)) = (file_tool, args.as_object_mut())
        && !map.contains_key("path")
        && let Some(path) = map.remove("file_path")
    {
        map.insert("path".to_owned(), path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_both_ways_and_others_pass_through() {
        assert_eq!(wire("shell"), "bash");
        assert_eq!(wire("list_dir"), "ls");
        assert_eq!(wire("mcp__fs__read"), "mcp__fs__read");
        for (a3s, gantry) in [("Bash", "shell"), ("bash", "shell"), ("LS", "list_dir")] {
            assert_eq!(engine(a3s), gantry);
        }
        assert_eq!(engine("Read"), "read_file");
        assert_eq!(engine("read_file"), "read_file");
        assert_eq!(engine("todo_write"), "todo_write");
        let mut args = serde_json::json!({"file_path": "a.rs"});
        engine_arguments("read_file", &mut args);
        assert_eq!(args, serde_json::json!({"path": "a.rs"}));
    }
}
