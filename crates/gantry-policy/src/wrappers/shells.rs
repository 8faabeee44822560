//! Shells and shell builtins that run a command: `bash -c`, `eval`,
//! `trap`, `command`, `exec`, and `busybox`/`toybox`, whose first argument
//! is the command.

use super::getopt::{GETOPT, Getopt};
use super::{Wrapped, joined_script, runs_argv, runs_script, simple, with_opts};
use crate::shell::{ShellWord, WordKind};

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "posh" | "rbash"
        | "fish" | "csh" | "tcsh" => shell(name, args),
        "busybox" | "toybox" => match args.first() {
            // `busybox --list`, `--install`, `--help`.
            Some(w)
                if w.kind == WordKind::Literal && w.text.starts_with("--") && w.text != "--" =>
            {
                Wrapped::No
            }
            Some(w) if w.text == "--" => runs_argv(args.get(1..).unwrap_or_default(), true),
            // The applet is the command: `busybox rm x` is `rm x`.
            _ => runs_argv(args, true),
        },
        "eval" => joined_script(name, args, true),
        // `trap ACTION SIGNAL...`: the action runs later, in this shell.
        "trap" => {
            let args = match args.first() {
                Some(w) if w.text == "--" => args.get(1..).unwrap_or_default(),
                _ => args,
            };
            match args {
                [action, _, ..] if !matches!(action.text.as_str(), "-" | "" | "-p" | "-l") => {
                    runs_script(name, action, true)
                }
                _ => Wrapped::No,
            }
        }
        "command" | "builtin" => with_opts(
            name,
            args,
            Getopt {
                flags: "pvV",
                ..GETOPT
            },
            // `command -v x` only looks `x` up.
            |p| {
                if p.has(&["v", "V"]) {
                    Wrapped::No
                } else {
                    runs_argv(&p.operands, true)
                }
            },
        ),
        "exec" => simple(
            name,
            args,
            Getopt {
                flags: "cl",
                values: "a",
                ..GETOPT
            },
            true,
        ),
        _ => return None,
    };
    Some(w)
}

/// `bash [options] -c SCRIPT [name [args]]`. With a script file operand the
/// shell runs that file, which is its own business (the rules see
/// `bash x.sh`); with neither, or `-s`, it runs whatever its input says.
pub(super) fn shell(name: &str, args: &[ShellWord]) -> Wrapped {
    let mut i = 0;
    let mut script_mode = false;
    let mut stdin = false;
    while let Some(w) = args.get(i) {
        if w.kind != WordKind::Literal {
            return Wrapped::Opaque(format!("{name} with options only known at run time"));
        }
        let t = w.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            if matches!(long, "help" | "version") {
                return Wrapped::No;
            }
            // `--rcfile FILE` and `--init-file FILE` take the next word.
            i += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if let Some(flags) = t.strip_prefix('-').or_else(|| t.strip_prefix('+')) {
            script_mode |= flags.contains('c');
            stdin |= flags.contains('s');
            // `-o option` and `-O shopt` take the next word.
            i += if flags.contains('o') || flags.contains('O') {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if script_mode {
        return match args.get(i) {
            Some(script) => runs_script(&format!("{name} -c"), script, true),
            None => Wrapped::No,
        };
    }
    if stdin || args.get(i).is_none() {
        return Wrapped::Opaque(format!("{name} runs the commands of its input"));
    }
    Wrapped::No
}
