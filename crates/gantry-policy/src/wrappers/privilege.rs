//! Programs that run a command as someone else, or with other
//! credentials: `sudo`, `doas`, `pkexec`, `su`, `runuser`, `sg`,
//! `newgrp`, `setpriv`, `fakeroot`. They change who runs the command: not
//! transparent, an allow rule must cover the wrapper itself too.

use super::getopt::{GETOPT, Getopt};
use super::shells::shell;
use super::{
    Inner, Wrapped, is_assignment, joined_script, or_shell, runs_argv, runs_script, simple,
    with_changes_dir, with_opts,
};
use crate::shell::{ShellWord, WordKind};

/// What `name` runs, if it is one of this family's programs.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Option<Wrapped> {
    let w = match name {
        "sudo" => sudo(args),
        "doas" => with_opts(
            name,
            args,
            Getopt {
                flags: "Lns",
                values: "Cu",
                ..GETOPT
            },
            |p| {
                if p.operands.is_empty() && p.has(&["s"]) {
                    or_shell(name, &p.operands, false)
                } else {
                    runs_argv(&p.operands, false)
                }
            },
        ),
        "pkexec" => with_opts(
            name,
            args,
            Getopt {
                long_flags: "disable-internal-agent keep-cwd help version",
                long_values: "user",
                ..GETOPT
            },
            |p| {
                if p.has(&["help", "version"]) {
                    Wrapped::No
                } else {
                    or_shell(name, &p.operands, false)
                }
            },
        ),
        "su" | "runuser" => su(name, args),
        // `sg [-] [GROUP [-c] COMMAND]`: the command is a shell string.
        "sg" => {
            let args = match args.first() {
                Some(w) if w.text == "-" => args.get(1..).unwrap_or_default(),
                _ => args,
            };
            match args.get(1..).unwrap_or_default() {
                [] => Wrapped::Opaque("sg runs a shell that reads its input".into()),
                [c, rest @ ..] if c.text == "-c" => joined_script(name, rest, false),
                rest => joined_script(name, rest, false),
            }
        }
        "newgrp" => Wrapped::Opaque("newgrp runs a shell that reads its input".into()),
        "setpriv" => simple(
            name,
            args,
            Getopt {
                flags: "dhV",
                long_flags: "dump nnp no-new-privs clear-groups keep-groups init-groups \
                    reset-env help version",
                long_values: "reuid regid ruid euid rgid egid groups inh-caps ambient-caps \
                    bounding-set securebits pdeathsig selinux-label apparmor-profile \
                    landlock-access landlock-rule",
                ..GETOPT
            },
            false,
        ),
        "fakeroot" => with_opts(
            name,
            args,
            Getopt {
                flags: "uhv",
                values: "lfisb",
                long_flags: "unknown-is-real help version",
                long_values: "lib faked",
                ..GETOPT
            },
            |p| or_shell(name, &p.operands, false),
        ),
        _ => return None,
    };
    Some(w)
}

/// `sudo [options] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn sudo(args: &[ShellWord]) -> Wrapped {
    let spec = Getopt {
        flags: "ABbEeHiKklNnPSsVv",
        values: "aCcDgpRrTtUu",
        optional: "h",
        long_flags: "askpass bell background preserve-env edit set-home help host login \
            remove-timestamp reset-timestamp list no-update non-interactive preserve-groups \
            stdin shell version validate",
        long_values: "auth-type close-from login-class chdir group prompt chroot role type \
            command-timeout other-user user",
        ..GETOPT
    };
    with_opts("sudo", args, spec, |p| {
        // Editing files, listing, validating: nothing runs.
        if p.has(&[
            "e", "edit", "l", "list", "v", "validate", "V", "version", "K",
        ]) {
            return Wrapped::No;
        }
        let split = p
            .operands
            .iter()
            .position(|w| !(w.kind == WordKind::Literal && is_assignment(&w.text)))
            .unwrap_or(p.operands.len());
        let (assignments, argv) = p.operands.split_at(split);
        let moves = p.has(&["i", "login", "D", "chdir", "R", "chroot"]);
        if argv.is_empty() {
            return if p.has(&["i", "login", "s", "shell"]) {
                Wrapped::Opaque("sudo runs a shell that reads its input".into())
            } else {
                Wrapped::No
            };
        }
        Wrapped::Runs {
            inner: vec![Inner::Argv {
                assignments: assignments.iter().map(|w| w.text.clone()).collect(),
                argv: argv.to_vec(),
            }],
            transparent: false,
            changes_dir: moves,
        }
    })
}

/// `su [options] [-] [USER [SHELL-ARGS...]]` and `runuser`, which also has
/// `runuser -u USER [--] COMMAND...`. `-c` takes a shell string; without it
/// the arguments after the user go to the user's shell (`su root x.sh`),
/// and with none the shell reads its input.
fn su(name: &str, args: &[ShellWord]) -> Wrapped {
    let spec = Getopt {
        flags: "flmpPhVR",
        values: if name == "runuser" {
            "cCgGswu"
        } else {
            "cCgGsw"
        },
        long_flags: "fast login preserve-environment pty no-pty help version",
        long_values: "command session-command group supp-group shell whitelist-environment user",
        ..GETOPT
    };
    // `runuser -u USER CMD ARGS...`: the command's own options are not
    // runuser's, so options end at the command.
    if name == "runuser"
        && let Ok(p) = spec.parse(name, args)
        && p.has(&["u", "user"])
    {
        return runs_argv(&p.operands, false);
    }
    // Otherwise options may come anywhere (`su - root -c CMD`).
    let spec = Getopt {
        permute: true,
        ..spec
    };
    with_opts(name, args, spec, |p| {
        if p.has(&["help", "version", "h", "V"]) {
            return Wrapped::No;
        }
        let mut rest: &[ShellWord] = &p.operands;
        let mut login = p.has(&["l", "login"]);
        if let Some((first, tail)) = rest.split_first()
            && first.text == "-"
        {
            login = true;
            rest = tail;
        }
        // The user.
        if !rest.is_empty() {
            rest = rest.get(1..).unwrap_or_default();
        }
        let w = if let Some(cmd) = p.value(&["c", "C", "command", "session-command"]) {
            runs_script(name, cmd, false)
        } else {
            match shell("su's shell", rest) {
                Wrapped::Runs { inner, .. } => Wrapped::Runs {
                    inner,
                    transparent: false,
                    changes_dir: false,
                },
                other => other,
            }
        };
        // A login shell starts in the user's home.
        with_changes_dir(w, login)
    })
}
