//! Language servers and what they answer (seed 001 `Lsp*`).
//!
//! Positions are 0-indexed, as in LSP and the seed: `line` counts lines from
//! 0 and `character` counts UTF-16 code units from the start of the line
//! (the LSP default; the same as characters for ASCII text). Files are named
//! by `file://` URIs, as the seed's `LspLocation`/`LspDiagnostic` do.

use serde::{Deserialize, Serialize};

/// One language server (seed `LspServerInfo`, plus where it runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspServerInfo {
    /// The language it serves, as configured (`python`, `rust`, ...).
    pub language: String,
    /// The server's name as it reports it (`pylsp`), else its command.
    pub name: String,
    /// The version it reports, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether its process is alive and initialized.
    pub running: bool,
    /// The workspace root it serves (an absolute path).
    pub root: String,
    /// The command it was started with (program and arguments).
    pub command: Vec<String>,
    /// Its process id while running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Why it is not running when it stopped on its own (crashed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A position in a file, 0-indexed (seed `LspPosition`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LspPosition {
    /// Line, from 0.
    pub line: u32,
    /// Offset in the line (UTF-16 code units), from 0.
    pub character: u32,
}

/// A range in a file, end exclusive (seed `LspRange`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspRange {
    /// First position.
    pub start: LspPosition,
    /// Position just past the end.
    pub end: LspPosition,
}

/// A range in a file (seed `LspLocation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspLocation {
    /// The file, as a `file://` URI.
    pub uri: String,
    /// Where in it.
    pub range: LspRange,
}

/// What a hover shows (seed `LspHoverResponse`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspHover {
    /// Whether the server had anything to show there.
    pub found: bool,
    /// The hover text (markdown); empty when not found.
    pub content: String,
    /// The range the hover applies to, when the server gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<LspRange>,
}

/// A symbol found by a workspace symbol search (seed `LspSymbol`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspSymbol {
    /// Its name.
    pub name: String,
    /// Its kind in snake case: `function`, `class`, `variable`, `method`,
    /// `enum_member`, ...
    pub kind: String,
    /// Where it is defined.
    pub location: LspLocation,
    /// The symbol it is declared in (a class for a method), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
}

/// How serious a diagnostic is (seed: `"error"`, `"warning"`, `"info"`, `"hint"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LspSeverity {
    /// An error.
    Error,
    /// A warning.
    Warning,
    /// Information.
    Info,
    /// A hint.
    Hint,
}

impl LspSeverity {
    /// The seed's string for it.
    pub fn as_str(self) -> &'static str {
        match self {
            LspSeverity::Error => "error",
            LspSeverity::Warning => "warning",
            LspSeverity::Info => "info",
            LspSeverity::Hint => "hint",
        }
    }
}

impl std::fmt::Display for LspSeverity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A problem a server reports in a file (seed `LspDiagnostic`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LspDiagnostic {
    /// The file, as a `file://` URI.
    pub uri: String,
    /// Where in it.
    pub range: LspRange,
    /// How serious it is (an unspecified severity counts as an error).
    pub severity: LspSeverity,
    /// What is wrong.
    pub message: String,
    /// The checker's code for it (`E0308`, `F401`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Which checker reported it (`pyflakes`, `rustc`), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// A language-server event for the engine-wide stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum LspEvent {
    /// A server started and finished initializing.
    Started {
        /// The server as it now is.
        server: LspServerInfo,
    },
    /// A server was stopped on request.
    Stopped {
        /// Its language.
        language: String,
        /// Its workspace root.
        root: String,
    },
    /// A server's process exited without being asked to; it can be
    /// started again.
    Crashed {
        /// The server as it now is (`running: false`, `error` says why).
        server: LspServerInfo,
    },
}
