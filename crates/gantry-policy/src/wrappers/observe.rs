//! Programs that watch or record what a command does: the tracers
//! (`strace`, `ltrace`), `valgrind`, and `script`, which records a
//! session. They write files (traces, the typescript), so none is
//! transparent.

use super::getopt::{GETOPT, Getopt};
use super::{Wrapped, runs_argv, runs_script, simple, with_opts};
use crate::shell::ShellWord;

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "script" => script(args),
        "strace" => simple(
            name,
            args,
            Getopt {
                flags: "cCdDfFhiknqrtTvVwxyzZ",
                values: "abeEIoOpPsSuUX",
                long_flags: "trace trace-fds signal status quiet silent silence inject fault \
                    raw read write abbrev verbose no-abbrev decode-fds decode-pids kvm \
                    absolute-timestamps timestamps relative-timestamps syscall-times \
                    successful-only failed-only seccomp-bpf daemonize follow-forks \
                    output-separately summary summary-only summary-wall-clock stack-trace \
                    instruction-pointer interruptible const-print-style tips help version",
                long_values: "output attach string-limit columns env user trace-path detach-on \
                    summary-sort summary-columns argv0",
                ..GETOPT
            },
            false,
        ),
        "ltrace" => simple(
            name,
            args,
            Getopt {
                flags: "bcCfhiLrStTV",
                values: "aAeDFlnopsuwx",
                long_flags: "demangle help version no-signals",
                long_values: "align config debug indent library output",
                ..GETOPT
            },
            false,
        ),
        // Its long options only take `=value`.
        "valgrind" => with_opts(
            name,
            args,
            Getopt {
                flags: "qvh",
                any_long: true,
                ..GETOPT
            },
            |p| runs_argv(&p.operands, false),
        ),
        _ => return None,
    };
    Some(w)
}

/// `script [options] [-c COMMAND] [FILE]` (util-linux), or BSD's
/// `script [-q] FILE [COMMAND...]`. Without a command it runs a shell that
/// reads its input. It writes the typescript file: not transparent.
fn script(args: &[ShellWord]) -> Wrapped {
    let spec = Getopt {
        flags: "aefqhVw",
        values: "cEIOBTmo",
        optional: "t",
        long_flags: "append return flush force quiet timing help version",
        long_values: "command echo log-in log-out log-io log-timing logging-format output-limit",
        ..GETOPT
    };
    with_opts("script", args, spec, |p| {
        if let Some(cmd) = p.value(&["c", "command"]) {
            return runs_script("script -c", cmd, false);
        }
        match p.operands.get(1..).unwrap_or_default() {
            [] => Wrapped::Opaque("script runs a shell that reads its input".into()),
            // Options after the file (`script f -c CMD`): not sure which.
            [first, ..] if first.text.starts_with('-') => {
                Wrapped::Opaque("script options after the file not understood".into())
            }
            argv => runs_argv(argv, false),
        }
    })
}
