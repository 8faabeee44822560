//! Programs that run commands built from their arguments or input, many
//! times: `parallel` (and `sem`), `xargs`, `find -exec`. They run whatever
//! the input says, so none is transparent.

use super::getopt::{GETOPT, Getopt};
use super::{Inner, Wrapped, all_literal, joined_script, runs_argv, with_opts};
use crate::shell::{ShellWord, WordKind};

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "parallel" | "sem" => parallel(args),
        "xargs" => xargs(args),
        "find" => find(args),
        _ => return None,
    };
    Some(w)
}

/// GNU `parallel [options] [COMMAND [ARGS]] (::: ARGS | :::: FILES)...`.
/// The command is a shell string; without one, each input is a command
/// line, which is only visible when given after `:::`.
fn parallel(args: &[ShellWord]) -> Wrapped {
    let spec = Getopt {
        flags: "0gkmqrtuvXZ",
        values: "aCdEIjLnNPsS",
        optional: "eil",
        long_flags: "null keep-order quote ungroup verbose no-run-if-empty group line-buffer \
            lb tag dry-run eta progress bar will-cite xargs pipe pipepart plus shellquote \
            no-notice nonall onall files cat fifo fg bg wait semaphore eof replace \
            max-replace-args halt-on-error help version",
        long_values: "jobs max-procs arg-file colsep delimiter max-args max-lines max-chars \
            sshlogin sshloginfile slf results res joblog tmpdir timeout delay retries halt env \
            tagstring workdir wd basefile bf return transferfile tf load memfree block \
            block-size recstart recend header rpl sshdelay termseq limit id semaphorename \
            arg-sep arg-file-sep",
        ..GETOPT
    };
    with_opts("parallel", args, spec, |p| {
        if p.has(&["arg-sep", "arg-file-sep"]) {
            return Wrapped::Opaque("parallel with its own argument separators".into());
        }
        let is_sep = |w: &ShellWord| matches!(w.text.as_str(), ":::" | "::::" | ":::+" | "::::+");
        let end = p
            .operands
            .iter()
            .position(is_sep)
            .unwrap_or(p.operands.len());
        let command = p.operands.get(..end).unwrap_or_default();
        if !command.is_empty() {
            return joined_script("parallel", command, false);
        }
        // No command: the inputs are the command lines.
        let inputs = p.operands.get(end..).unwrap_or_default();
        if inputs.is_empty() || p.has(&["a", "arg-file"]) {
            return Wrapped::Opaque("parallel runs the command lines of its input".into());
        }
        let mut inner = Vec::new();
        let mut sep = "";
        for w in inputs {
            if is_sep(w) {
                sep = w.text.as_str();
                continue;
            }
            if sep.starts_with("::::") {
                return Wrapped::Opaque("parallel runs the command lines of a file".into());
            }
            if w.kind != WordKind::Literal {
                return Wrapped::Opaque("parallel of a command only known at run time".into());
            }
            inner.push(Inner::Script(w.text.clone()));
        }
        Wrapped::Runs {
            inner,
            transparent: false,
            changes_dir: false,
        }
    })
}

/// `xargs [options] [command [initial-arguments]]`; the command defaults to
/// `echo`.
fn xargs(args: &[ShellWord]) -> Wrapped {
    const WITH_VALUE: &[&str] = &["-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"];
    const FLAGS: &[&str] = &[
        "-0",
        "-r",
        "-t",
        "-p",
        "-x",
        "-o",
        "--null",
        "--no-run-if-empty",
        "--verbose",
        "--interactive",
        "--exit",
        "--open-tty",
    ];
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w.kind != WordKind::Literal {
            return Wrapped::Opaque("xargs with words only known at run time".into());
        }
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if !t.starts_with('-') {
            break;
        }
        if WITH_VALUE.contains(&t) {
            i += 2;
        } else if FLAGS.contains(&t)
            || t.starts_with("--") && t.contains('=')
            || WITH_VALUE.iter().any(|o| t.starts_with(o))
            || t.starts_with("-i")
            || t.starts_with("-l")
            || t.starts_with("-e")
        {
            i += 1;
        } else {
            return Wrapped::Opaque(format!("xargs option {t} not understood"));
        }
    }
    let rest = args.get(i..).unwrap_or_default();
    if rest.is_empty() {
        runs_argv(&[ShellWord::literal("echo")], false)
    } else {
        runs_argv(rest, false)
    }
}

/// The commands of `find ... -exec CMD ... ;` (also `-execdir`, `-ok`,
/// `-okdir`, and the `+` terminator).
fn find(args: &[ShellWord]) -> Wrapped {
    // An unquoted `$X` may split into `-exec rm {} ;` or `-delete`.
    if !all_literal(args) {
        return Wrapped::Opaque("find with words only known at run time".into());
    }
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(w) = args.get(i) {
        i += 1;
        if matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i;
            while let Some(a) = args.get(i) {
                if matches!(a.text.as_str(), ";" | "+") {
                    break;
                }
                i += 1;
            }
            let cmd = args.get(start..i).unwrap_or_default().to_vec();
            if cmd.is_empty() {
                continue;
            }
            out.push(Inner::Argv {
                assignments: Vec::new(),
                argv: cmd,
            });
        }
    }
    if out.is_empty() {
        Wrapped::No
    } else {
        Wrapped::Runs {
            inner: out,
            transparent: false,
            changes_dir: false,
        }
    }
}
