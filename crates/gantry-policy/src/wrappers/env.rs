//! `env`: assignments, options that change the environment or the
//! directory, and `-S`, which splits a string into more arguments.

use std::collections::VecDeque;

use super::{Inner, Wrapped, is_assignment};
use crate::shell::{ShellWord, WordKind};

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "env" => env(args),
        _ => return None,
    };
    Some(w)
}

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(args: &[ShellWord]) -> Wrapped {
    let mut assignments = Vec::new();
    let mut changes_dir = false;
    // `-S` splits its string into more arguments, processed like these.
    let mut words: VecDeque<ShellWord> = args.iter().cloned().collect();
    while let Some(w) = words.front() {
        if w.kind != WordKind::Literal {
            return Wrapped::Opaque("env with words only known at run time".into());
        }
        let t = w.text.clone();
        let take = |words: &mut VecDeque<ShellWord>, n: usize| {
            for _ in 0..n {
                words.pop_front();
            }
        };
        let split = t
            .strip_prefix("--split-string=")
            .or_else(|| t.strip_prefix("-S").filter(|s| !s.is_empty()));
        match t.as_str() {
            "-i" | "-" | "--ignore-environment" | "-0" | "--null" | "-v" | "--debug" => {
                take(&mut words, 1)
            }
            "-u" | "--unset" | "-a" | "--argv0" => take(&mut words, 2),
            "-C" | "--chdir" => {
                changes_dir = true;
                take(&mut words, 2);
            }
            "-S" | "--split-string" => {
                take(&mut words, 1);
                match words.pop_front() {
                    Some(s) => match split_string(&s) {
                        Some(parts) => {
                            for p in parts.into_iter().rev() {
                                words.push_front(ShellWord::literal(p));
                            }
                        }
                        None => return Wrapped::Opaque("env -S string not understood".into()),
                    },
                    None => return Wrapped::No,
                }
            }
            "--" => {
                take(&mut words, 1);
                break;
            }
            _ if split.is_some() => {
                let s = ShellWord::literal(split.unwrap_or_default());
                take(&mut words, 1);
                match split_string(&s) {
                    Some(parts) => {
                        for p in parts.into_iter().rev() {
                            words.push_front(ShellWord::literal(p));
                        }
                    }
                    None => return Wrapped::Opaque("env -S string not understood".into()),
                }
            }
            _ if t.starts_with("--unset=")
                || t.starts_with("--argv0=")
                || (t.starts_with("-u") && t.len() > 2) =>
            {
                take(&mut words, 1)
            }
            _ if t.starts_with("--chdir=") || (t.starts_with("-C") && t.len() > 2) => {
                changes_dir = true;
                take(&mut words, 1);
            }
            _ if t.starts_with('-') => {
                return Wrapped::Opaque(format!("env option {t} not understood"));
            }
            _ if is_assignment(&t) => {
                assignments.push(t);
                take(&mut words, 1);
            }
            _ => break,
        }
    }
    let argv: Vec<ShellWord> = words.into_iter().collect();
    if argv.is_empty() {
        return Wrapped::No;
    }
    Wrapped::Runs {
        inner: vec![Inner::Argv { assignments, argv }],
        transparent: true,
        changes_dir,
    }
}

/// The words of `env -S STRING`, when it uses no quotes, escapes or
/// variables (which `env` handles its own way).
fn split_string(s: &ShellWord) -> Option<Vec<String>> {
    if s.kind != WordKind::Literal || s.text.contains(['\'', '"', '\\', '$', '#']) {
        return None;
    }
    Some(s.text.split_whitespace().map(str::to_owned).collect())
}
