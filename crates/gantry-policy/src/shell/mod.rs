//! Splits a shell command line into the simple commands it runs and the
//! files it writes, with a real bash parser (`brush-parser`).
//!
//! Everything that runs is a part: each command of a list (`;`, `&&`, `||`,
//! `&`, newlines), of a pipeline, of a subshell, group, loop, `if`, `case` or
//! function body; the commands inside `$(...)`, backticks and `<(...)`; the
//! command a wrapper runs (`bash -c '...'`, `eval`, `env`, `timeout`, `sudo`,
//! `su -c`, `flock`, `chroot`, `strace`, `parallel`, `busybox`, `xargs`,
//! `find -exec`, ...; see the `wrappers` module). A redirection to a file is
//! a [`ShellPart::Write`]. Whatever the analysis cannot see through (a command
//! name only known at run time, arithmetic, a parse error, a wrapper option
//! it does not know, commands a wrapper reads from its input) is a
//! [`ShellPart::Opaque`], which the decision treats as "cannot prove safe".

mod walker;
mod words;

use walker::Walker;

/// One word of a command, after quote removal where that is static.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellWord {
    /// The unquoted text if [`WordKind::Literal`]; the source text otherwise.
    pub text: String,
    /// Whether the text is what the command will see.
    pub kind: WordKind,
    /// Unquoted glob characters (`*`, `?`, `[`): the shell may replace the
    /// word with file names, which could look like options (`-delete`).
    pub glob: bool,
}

/// Whether a word's value is known before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordKind {
    /// Quotes removed, nothing to expand: the text is the value.
    Literal,
    /// Starts with a tilde (`~`, `~/x`, `~user`): known shape, but the home
    /// directory is only known at run time.
    Tilde,
    /// Contains a parameter or command substitution: the value is only
    /// known at run time.
    Dynamic,
}

impl ShellWord {
    /// A word whose value is `text` as written.
    pub(crate) fn literal(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            kind: WordKind::Literal,
            glob: false,
        }
    }
}

/// A simple command: `NAME=value ... argv[0] argv[1] ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Variable assignments before the command, as written (`FOO=1`).
    pub assignments: Vec<String>,
    /// The command and its arguments (empty for a bare assignment).
    pub argv: Vec<ShellWord>,
    /// A wrapper that only runs another command, which is a part of its own
    /// (`bash -c`, `eval`, `env`, `command`, `exec`, `nohup`, `nice`,
    /// `timeout`, `stdbuf`, `setsid`, `time`, `ionice`, `taskset`, `chrt`,
    /// `busybox`, ...). Deny and ask rules still apply to it; it needs no
    /// allow rule of its own. Wrappers that change the user, the root or
    /// the namespaces, or that write files (`sudo`, `su`, `chroot`, `flock`,
    /// `strace`, `script`) are not transparent.
    pub transparent: bool,
}

impl SimpleCommand {
    /// The command's name as written, if static.
    pub fn program(&self) -> Option<&str> {
        self.argv
            .first()
            .filter(|w| w.kind == WordKind::Literal)
            .map(|w| w.text.as_str())
    }

    /// The argument words' texts.
    pub fn words(&self) -> Vec<&str> {
        self.argv.iter().map(|w| w.text.as_str()).collect()
    }

    /// The command as one line: assignments, then words, space separated.
    pub fn text(&self) -> String {
        let mut out: Vec<&str> = self.assignments.iter().map(String::as_str).collect();
        out.extend(self.words());
        out.join(" ")
    }
}

/// One thing a command line does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellPart {
    /// A simple command that runs.
    Command(SimpleCommand),
    /// A file written through a redirection (`> f`, `>> f`, `&> f`, `>& f`);
    /// `None` when the name is only known at run time.
    Write(Option<String>),
    /// Something the analysis cannot see through; the text says what.
    Opaque(String),
}

/// The parts of a command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellAnalysis {
    /// Everything the command line runs or writes, in source order.
    pub parts: Vec<ShellPart>,
    /// Whether it changes directory (`cd`, `pushd`, `popd`, `env -C`), so that
    /// relative paths in later parts cannot be resolved statically.
    pub changes_dir: bool,
}

impl ShellAnalysis {
    /// Whether any part is opaque.
    pub fn has_opaque(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, ShellPart::Opaque(_)))
    }
}

/// Splits `command` (as given to `bash -lc`) into its parts.
pub fn analyze(command: &str) -> ShellAnalysis {
    Walker::run(command)
}

/// The last path component: `/usr/bin/env` is `env`.
pub fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}
