//! Programs that run a command as it is, with another priority, CPU set,
//! resource limits, buffering, time limit, session or lock, or over and
//! over (`watch`): `nohup`, `setsid`, `time`, `nice`, `stdbuf`, `timeout`,
//! `ionice`, `taskset`, `chrt`, `prlimit`, `unbuffer`, `catchsegv`,
//! `watch`, `flock`.

use super::getopt::{GETOPT, Getopt};
use super::{Wrapped, joined_script, runs_argv, runs_script, simple, with_opts};
use crate::shell::{ShellWord, WordKind};

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "nohup" => simple(name, args, GETOPT, true),
        "setsid" => simple(
            name,
            args,
            Getopt {
                flags: "cfw",
                long_flags: "ctty fork wait help version",
                ..GETOPT
            },
            true,
        ),
        "time" => with_opts(
            name,
            args,
            Getopt {
                flags: "apqv",
                values: "fo",
                long_flags: "append portability quiet verbose help version",
                long_values: "format output",
                ..GETOPT
            },
            // `-o FILE` writes a file: then not transparent.
            |p| runs_argv(&p.operands, !p.has(&["o", "output"])),
        ),
        "nice" => simple(
            name,
            args,
            Getopt {
                values: "n",
                long_values: "adjustment",
                numbers: true,
                ..GETOPT
            },
            true,
        ),
        "stdbuf" => simple(
            name,
            args,
            Getopt {
                values: "ioe",
                long_values: "input output error",
                ..GETOPT
            },
            true,
        ),
        "timeout" => with_opts(
            name,
            args,
            Getopt {
                flags: "v",
                values: "sk",
                long_flags: "preserve-status foreground verbose help version",
                long_values: "signal kill-after",
                ..GETOPT
            },
            // The first operand is the duration.
            |p| runs_argv(p.operands.get(1..).unwrap_or_default(), true),
        ),
        "ionice" => with_opts(
            name,
            args,
            Getopt {
                flags: "th",
                values: "cnpPu",
                long_flags: "ignore help version",
                long_values: "class classdata pid pgid uid",
                ..GETOPT
            },
            // With `-p`, `-P` or `-u` the operands are process ids.
            |p| {
                if p.has(&["p", "P", "u", "pid", "pgid", "uid"]) {
                    Wrapped::No
                } else {
                    runs_argv(&p.operands, true)
                }
            },
        ),
        "taskset" => with_opts(
            name,
            args,
            Getopt {
                flags: "acphV",
                long_flags: "all-tasks cpu-list pid help version",
                ..GETOPT
            },
            // `taskset MASK CMD...`; with `-p` the operands are a process.
            |p| {
                if p.has(&["p", "pid"]) {
                    Wrapped::No
                } else {
                    runs_argv(p.operands.get(1..).unwrap_or_default(), true)
                }
            },
        ),
        "chrt" => with_opts(
            name,
            args,
            Getopt {
                flags: "abdfimoprRvhV",
                values: "TPD",
                long_flags: "all-tasks batch deadline fifo idle max other pid rr reset-on-fork \
                    verbose help version",
                long_values: "sched-runtime sched-period sched-deadline",
                ..GETOPT
            },
            // `chrt [opts] PRIORITY CMD...`; `-p` and `-m` run nothing.
            |p| {
                if p.has(&["p", "pid", "m", "max"]) {
                    Wrapped::No
                } else {
                    runs_argv(p.operands.get(1..).unwrap_or_default(), true)
                }
            },
        ),
        "prlimit" => simple(
            name,
            args,
            Getopt {
                flags: "hV",
                values: "po",
                // The resource options take an attached value, if any.
                optional: "cdefilmnqrstuvxy",
                long_flags: "noheadings raw verbose help version as core cpu data fsize locks \
                    memlock msgqueue nice nofile nproc rss rtprio rttime sigpending stack",
                long_values: "pid output",
                ..GETOPT
            },
            false,
        ),
        "flock" => flock(args),
        "watch" => with_opts(
            name,
            args,
            Getopt {
                flags: "bcCegptwxrhv",
                values: "nq",
                optional: "d",
                long_flags: "beep color no-color differences errexit chgexit precise no-title \
                    no-wrap exec no-rerun help version",
                long_values: "interval equexit",
                ..GETOPT
            },
            // The words are joined and run by `sh -c` (directly with `-x`).
            |p| joined_script(name, &p.operands, false),
        ),
        "unbuffer" => simple(
            name,
            args,
            Getopt {
                flags: "p",
                ..GETOPT
            },
            true,
        ),
        "catchsegv" => runs_argv(args, true),
        _ => return None,
    };
    Some(w)
}

/// `flock [options] FILE COMMAND...`, `flock [options] FILE -c COMMAND`,
/// `flock [options] FD`.
fn flock(args: &[ShellWord]) -> Wrapped {
    let spec = Getopt {
        flags: "sexnouFhV",
        values: "wEc",
        long_flags: "shared exclusive unlock nonblock nb close no-fork verbose help version",
        long_values: "timeout wait conflict-exit-code command",
        ..GETOPT
    };
    // It creates the lock file: not transparent.
    with_opts("flock", args, spec, |p| {
        if let Some(cmd) = p.value(&["c", "command"]) {
            return runs_script("flock -c", cmd, false);
        }
        match p.operands.get(1..).unwrap_or_default() {
            [c, rest @ ..]
                if c.kind == WordKind::Literal && matches!(c.text.as_str(), "-c" | "--command") =>
            {
                match rest.first() {
                    Some(cmd) => runs_script("flock -c", cmd, false),
                    None => Wrapped::No,
                }
            }
            argv => runs_argv(argv, false),
        }
    })
}
