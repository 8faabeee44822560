//! The programs that run another command, and how to find that command in
//! their arguments: `sudo`, `su -c`, `env`, `timeout`, `nice`, `flock`,
//! `chroot`, `strace`, `ionice`, `taskset`, `parallel`, `busybox`, `xargs`,
//! `find -exec`, `bash -c`, `eval` and more.
//!
//! Each wrapper's options are parsed strictly, as its own `getopt` would: an
//! option we do not know could take a value, which would then be mistaken
//! for the command (`sudo --user root rm` is not the command `root`), so it
//! makes the wrapper opaque instead. So does a command read from the input
//! or a file (`cat cmds | parallel`, `echo cmd | su`), or a command string
//! only known at run time.

mod batch;
mod env;
mod getopt;
mod isolation;
mod observe;
mod privilege;
mod process;
mod shells;

use crate::shell::{ShellWord, WordKind};
use getopt::{Getopt, Parsed};

/// What a command runs besides itself.
pub(crate) enum Wrapped {
    /// Nothing we know of.
    No,
    /// It runs these.
    Runs {
        inner: Vec<Inner>,
        /// It only runs them (`env`, `timeout`, `busybox`): it needs no
        /// allow rule of its own. Wrappers that change who runs the
        /// command, where, or that write files are not transparent.
        transparent: bool,
        /// Relative paths in what it runs are not relative to the caller's
        /// directory any more (`env -C`, `su -`, `chroot`).
        changes_dir: bool,
    },
    /// It runs something the analysis cannot see: a command string only
    /// known at run time, commands read from its input or a file, or
    /// options it cannot tell from the command.
    Opaque(String),
}

/// One thing a wrapper runs.
pub(crate) enum Inner {
    /// A command and its arguments (`sudo rm x`).
    Argv {
        assignments: Vec<String>,
        argv: Vec<ShellWord>,
    },
    /// Shell source (`bash -c`, `su -c`, `eval`, `parallel`).
    Script(String),
}

/// Runs a command and its arguments, if there is one.
fn runs_argv(argv: &[ShellWord], transparent: bool) -> Wrapped {
    if argv.is_empty() {
        return Wrapped::No;
    }
    Wrapped::Runs {
        inner: vec![Inner::Argv {
            assignments: Vec::new(),
            argv: argv.to_vec(),
        }],
        transparent,
        changes_dir: false,
    }
}

/// Runs a shell script, if its text is known before it runs.
fn runs_script(name: &str, script: &ShellWord, transparent: bool) -> Wrapped {
    if script.kind != WordKind::Literal {
        return Wrapped::Opaque(format!("{name} of a script only known at run time"));
    }
    Wrapped::Runs {
        inner: vec![Inner::Script(script.text.clone())],
        transparent,
        changes_dir: false,
    }
}

/// Words that make one shell string once joined with spaces (`eval a b`,
/// `watch cmd args`, `parallel cmd args`).
fn joined_script(name: &str, words: &[ShellWord], transparent: bool) -> Wrapped {
    if words.is_empty() {
        return Wrapped::No;
    }
    if !all_literal(words) {
        return Wrapped::Opaque(format!("{name} of a command only known at run time"));
    }
    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    runs_script(name, &ShellWord::literal(text.join(" ")), transparent)
}

/// `w`, noting that it moves relative paths if `changes_dir`.
fn with_changes_dir(w: Wrapped, changes_dir: bool) -> Wrapped {
    match w {
        Wrapped::Runs {
            inner,
            transparent,
            changes_dir: c,
        } => Wrapped::Runs {
            inner,
            transparent,
            changes_dir: c || changes_dir,
        },
        other => other,
    }
}

/// Whether no word holds a substitution (tildes are fine).
fn all_literal(words: &[ShellWord]) -> bool {
    words.iter().all(|w| w.kind != WordKind::Dynamic)
}

/// Parses a wrapper's options, then says what it runs: `then` gets the
/// parsed options and operands.
fn with_opts(
    name: &str,
    args: &[ShellWord],
    spec: Getopt,
    then: impl FnOnce(Parsed) -> Wrapped,
) -> Wrapped {
    match spec.parse(name, args) {
        Ok(p) => then(p),
        Err(why) => Wrapped::Opaque(why),
    }
}

/// The common case: options, then the command and its arguments.
fn simple(name: &str, args: &[ShellWord], spec: Getopt, transparent: bool) -> Wrapped {
    with_opts(name, args, spec, |p| runs_argv(&p.operands, transparent))
}

/// Like [`simple`], but without a command the program starts a shell that
/// reads commands from its input (`chroot DIR`, `unshare`, `sudo -s`).
fn or_shell(name: &str, operands: &[ShellWord], transparent: bool) -> Wrapped {
    if operands.is_empty() {
        return Wrapped::Opaque(format!("{name} runs a shell that reads its input"));
    }
    runs_argv(operands, transparent)
}

/// Whether a word is `NAME=value` with a valid variable name.
fn is_assignment(t: &str) -> bool {
    match t.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Finds the command(s) a wrapper program runs. `args` are the words after
/// the program's name.
pub(crate) fn unwrap(name: &str, args: &[ShellWord]) -> Wrapped {
    // Each family knows its own names and no name is in two, so the order
    // does not matter.
    shells::unwrap(name, args)
        .or_else(|| env::unwrap(name, args))
        .or_else(|| process::unwrap(name, args))
        .or_else(|| observe::unwrap(name, args))
        .or_else(|| privilege::unwrap(name, args))
        .or_else(|| isolation::unwrap(name, args))
        .or_else(|| batch::unwrap(name, args))
        .unwrap_or(Wrapped::No)
}
