//! Which server serves which language: the defaults table, overrides, and
//! finding a server's program on `PATH` before anything is spawned.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A command that starts a language server speaking LSP on stdio.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspCommand {
    /// Program: a name looked up in `PATH`, or a path.
    pub program: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// What to tell a user who does not have it (`pip install ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_hint: Option<String>,
}

impl LspCommand {
    /// `program` with `args` and no install hint.
    pub fn new(program: impl Into<String>, args: &[&str]) -> Self {
        Self {
            program: program.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            install_hint: None,
        }
    }

    fn hint(mut self, hint: &str) -> Self {
        self.install_hint = Some(hint.to_owned());
        self
    }

    /// Program and arguments, for listings.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(self.program.clone())
            .chain(self.args.iter().cloned())
            .collect()
    }
}

/// The server for one language.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LspServerConfig {
    /// The language's name (`python`): what callers start and stop.
    pub language: String,
    /// Other names callers may use (`py`, `javascript`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// File extensions it serves, without the dot (`py`, `pyi`).
    pub extensions: Vec<String>,
    /// Commands to try in order; the first whose program is installed runs.
    pub commands: Vec<LspCommand>,
    /// Sent as `initializationOptions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_options: Option<serde_json::Value>,
}

impl LspServerConfig {
    /// A config for `language` run by one command.
    pub fn new(language: impl Into<String>, extensions: &[&str], command: LspCommand) -> Self {
        Self {
            language: language.into(),
            aliases: Vec::new(),
            extensions: extensions.iter().map(|e| (*e).to_owned()).collect(),
            commands: vec![command],
            init_options: None,
        }
    }

    fn aliases(mut self, aliases: &[&str]) -> Self {
        self.aliases = aliases.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    fn or(mut self, command: LspCommand) -> Self {
        self.commands.push(command);
        self
    }

    /// Whether `name` (any case) names this language.
    pub fn answers_to(&self, name: &str) -> bool {
        let name = name.trim();
        self.language.eq_ignore_ascii_case(name)
            || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Whether it serves files with extension `ext` (any case).
    pub fn serves_extension(&self, ext: &str) -> bool {
        self.extensions.iter().any(|e| e.eq_ignore_ascii_case(ext))
    }

    /// The first command whose program is installed, with its resolved path.
    pub fn installed_command(&self) -> Option<(LspCommand, PathBuf)> {
        self.commands
            .iter()
            .find_map(|c| find_program(&c.program).map(|p| (c.clone(), p)))
    }
}

/// The built-in table: rust-analyzer, pylsp (else pyright),
/// typescript-language-server, clangd and gopls, each used when installed.
pub fn default_servers() -> Vec<LspServerConfig> {
    vec![
        LspServerConfig::new(
            "rust",
            &["rs"],
            LspCommand::new("rust-analyzer", &[])
                .hint("install it with `rustup component add rust-analyzer`"),
        )
        .aliases(&["rs"]),
        LspServerConfig::new(
            "python",
            &["py", "pyi"],
            LspCommand::new("pylsp", &[]).hint("install it with `pip install python-lsp-server`"),
        )
        .or(LspCommand::new("pyright-langserver", &["--stdio"])
            .hint("install it with `npm install -g pyright`"))
        .aliases(&["py"]),
        LspServerConfig::new(
            "typescript",
            &["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"],
            LspCommand::new("typescript-language-server", &["--stdio"])
                .hint("install it with `npm install -g typescript typescript-language-server`"),
        )
        .aliases(&["ts", "javascript", "js"]),
        LspServerConfig::new(
            "cpp",
            &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "hxx"],
            LspCommand::new("clangd", &[]).hint("install it with `apt-get install clangd`"),
        )
        .aliases(&["c", "c++", "cxx"]),
        LspServerConfig::new(
            "go",
            &["go"],
            LspCommand::new("gopls", &[])
                .hint("install it with `go install golang.org/x/tools/gopls@latest`"),
        )
        .aliases(&["golang"]),
    ]
}

/// The LSP `languageId` of a file, from its extension.
pub(crate) fn language_id(language: &str, ext: &str) -> String {
    let ext = ext.to_ascii_lowercase();
    let id = match ext.as_str() {
        "rs" => "rust",
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        "go" => "go",
        _ => return language.to_owned(),
    };
    id.to_owned()
}

/// Time limits for language servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LspTimeouts {
    /// Spawning and the `initialize` handshake.
    pub startup: Duration,
    /// One request (hover, definition, ...).
    pub request: Duration,
    /// Waiting for a file's diagnostics after it was opened or changed;
    /// past it, what the server has published so far is returned.
    pub diagnostics: Duration,
}

impl Default for LspTimeouts {
    fn default() -> Self {
        Self {
            startup: Duration::from_secs(60),
            request: Duration::from_secs(30),
            diagnostics: Duration::from_secs(15),
        }
    }
}

/// Where `program` is: itself if it names a path (with a `/`), else the
/// first executable of that name on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_are_found_by_name_alias_and_extension() {
        let servers = default_servers();
        let by_name = |n: &str| {
            servers
                .iter()
                .find(|s| s.answers_to(n))
                .map(|s| &s.language)
        };
        assert_eq!(by_name("Python").map(String::as_str), Some("python"));
        assert_eq!(
            by_name("javascript").map(String::as_str),
            Some("typescript")
        );
        assert_eq!(by_name("c").map(String::as_str), Some("cpp"));
        assert_eq!(by_name("cobol"), None);
        let by_ext = |e: &str| {
            servers
                .iter()
                .find(|s| s.serves_extension(e))
                .map(|s| &s.language)
        };
        assert_eq!(by_ext("RS").map(String::as_str), Some("rust"));
        assert_eq!(by_ext("hpp").map(String::as_str), Some("cpp"));
        assert_eq!(language_id("cpp", "h"), "c");
        assert_eq!(language_id("typescript", "tsx"), "typescriptreact");
    }

    #[test]
    fn programs_are_looked_up_on_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("surely-no-such-language-server").is_none());
        assert!(find_program("/nonexistent/dir/pylsp").is_none());
        assert!(find_program("").is_none());
    }
}
