//! Programs that run a command somewhere else: another root, other
//! namespaces, a sandbox, a proxy or a virtual display: `chroot`,
//! `unshare`, `nsenter`, `firejail`, `proxychains`, `torsocks`,
//! `xvfb-run`. None is transparent.

use super::getopt::{GETOPT, Getopt};
use super::{Wrapped, or_shell, runs_argv, simple, with_changes_dir, with_opts};
use crate::shell::ShellWord;

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "chroot" => with_opts(
            name,
            args,
            Getopt {
                long_flags: "skip-chdir help version",
                long_values: "userspec groups",
                ..GETOPT
            },
            // `chroot DIR [CMD...]`; it changes to the new `/`.
            |p| {
                let w = or_shell(name, p.operands.get(1..).unwrap_or_default(), false);
                with_changes_dir(w, true)
            },
        ),
        "unshare" => with_opts(
            name,
            args,
            Getopt {
                flags: "fhVmuinpCTUrc",
                values: "RwSGl",
                long_flags: "fork mount uts ipc net pid user cgroup time mount-proc \
                    mount-binfmt map-root-user map-current-user map-auto kill-child keep-caps \
                    help version",
                long_values: "propagation setgroups root wd setuid setgid monotonic boottime \
                    map-user map-group map-users map-groups load-interp",
                ..GETOPT
            },
            |p| {
                let moves = p.has(&["R", "w", "root", "wd"]);
                with_changes_dir(or_shell(name, &p.operands, false), moves)
            },
        ),
        "nsenter" => with_opts(
            name,
            args,
            Getopt {
                flags: "ahVFZc",
                values: "tSG",
                optional: "muinpCUTrwWe",
                long_flags: "all mount uts ipc net pid cgroup user time root wd wdns env \
                    preserve-credentials no-fork follow-context join-cgroup user-parent \
                    keep-caps help version",
                long_values: "target setuid setgid",
                ..GETOPT
            },
            |p| with_changes_dir(or_shell(name, &p.operands, false), true),
        ),
        // A sandbox whose long options only take `=value`.
        "firejail" => with_opts(
            name,
            args,
            Getopt {
                flags: "qvh",
                any_long: true,
                ..GETOPT
            },
            |p| or_shell(name, &p.operands, false),
        ),
        "proxychains" | "proxychains4" => simple(
            name,
            args,
            Getopt {
                flags: "q",
                values: "f",
                ..GETOPT
            },
            false,
        ),
        "torsocks" => with_opts(
            name,
            args,
            Getopt {
                flags: "idqhV",
                values: "upaP",
                long_flags: "isolate quiet debug help version shell",
                long_values: "user pass address port",
                ..GETOPT
            },
            |p| {
                if p.has(&["shell"]) {
                    Wrapped::Opaque("torsocks --shell reads its input".into())
                } else {
                    runs_argv(&p.operands, false)
                }
            },
        ),
        "xvfb-run" => simple(
            name,
            args,
            Getopt {
                flags: "alh",
                values: "efnpsw",
                long_flags: "auto-servernum listen-tcp help",
                long_values: "error-file auth-file server-num xauth-protocol server-args wait",
                ..GETOPT
            },
            false,
        ),
        _ => return None,
    };
    Some(w)
}
