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

use super::shell::{ShellWord, WordKind};

/// What a command runs besides itself.
pub(super) enum Wrapped {
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
pub(super) enum Inner {
    /// A command and its arguments (`sudo rm x`).
    Argv {
        assignments: Vec<String>,
        argv: Vec<ShellWord>,
    },
    /// Shell source (`bash -c`, `su -c`, `eval`, `parallel`).
    Script(String),
}

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

fn all_literal(words: &[ShellWord]) -> bool {
    words.iter().all(|w| w.kind != WordKind::Dynamic)
}

/// A wrapper's option syntax, as `getopt_long` sees it. Parsing is strict:
/// an option not listed could take a value, which would then be mistaken
/// for the command, so it makes the wrapper opaque instead.
#[derive(Clone, Copy)]
struct Getopt {
    /// Short options without a value.
    flags: &'static str,
    /// Short options with a value (`-o FILE`, `-oFILE`).
    values: &'static str,
    /// Short options with an optional value, attached only (`-dVALUE`).
    optional: &'static str,
    /// Long options without a value, or with one only after `=`; space
    /// separated.
    long_flags: &'static str,
    /// Long options with a value (`--output FILE`, `--output=FILE`); space
    /// separated.
    long_values: &'static str,
    /// Every long option takes its value after `=` only (`firejail`,
    /// `valgrind`), so any `--name[=value]` is one word.
    any_long: bool,
    /// `-5`, `--10`: `nice`'s old adjustment syntax.
    numbers: bool,
    /// Options may follow operands (GNU getopt without `+`).
    permute: bool,
}

const GETOPT: Getopt = Getopt {
    flags: "",
    values: "",
    optional: "",
    long_flags: "help version",
    long_values: "",
    any_long: false,
    numbers: false,
    permute: false,
};

/// The options given to a wrapper and its operands.
struct Parsed {
    /// Option name (one character, or a long name) and value.
    opts: Vec<(String, Option<ShellWord>)>,
    /// The words after the options (all non-options when permuting).
    operands: Vec<ShellWord>,
}

impl Parsed {
    fn has(&self, names: &[&str]) -> bool {
        self.opts.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    /// The last value of an option.
    fn value(&self, names: &[&str]) -> Option<&ShellWord> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .and_then(|(_, v)| v.as_ref())
    }
}

impl Getopt {
    fn parse(&self, name: &str, args: &[ShellWord]) -> Result<Parsed, String> {
        let mut opts = Vec::new();
        let mut operands = Vec::new();
        let mut i = 0;
        while let Some(w) = args.get(i) {
            i += 1;
            if w.kind != WordKind::Literal {
                // A dynamic word might be an option or the command.
                return Err(format!("{name} with words only known at run time"));
            }
            let t = w.text.as_str();
            if t == "--" {
                break;
            }
            if t == "-" || !t.starts_with('-') {
                operands.push(w.clone());
                if self.permute {
                    continue;
                }
                break;
            }
            if self.numbers
                && t.trim_start_matches('-')
                    .chars()
                    .all(|c| c.is_ascii_digit())
            {
                opts.push(("n".to_owned(), Some(ShellWord::literal(t))));
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                let (key, attached) = match long.split_once('=') {
                    Some((k, v)) => (k, Some(ShellWord::literal(v))),
                    None => (long, None),
                };
                if has_word(self.long_values, key) {
                    let value = match attached {
                        Some(v) => v,
                        None => match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.clone()
                            }
                            // The program refuses a missing value: nothing runs.
                            None => return Ok(Parsed { opts, operands }),
                        },
                    };
                    opts.push((key.to_owned(), Some(value)));
                } else if self.any_long || has_word(self.long_flags, key) {
                    opts.push((key.to_owned(), attached));
                } else {
                    return Err(format!("{name} option --{key} not understood"));
                }
                continue;
            }
            let cluster = t.get(1..).unwrap_or_default();
            for (pos, c) in cluster.char_indices() {
                let rest = cluster.get(pos + c.len_utf8()..).unwrap_or_default();
                if self.flags.contains(c) {
                    opts.push((c.to_string(), None));
                } else if self.optional.contains(c) {
                    opts.push((c.to_string(), Some(ShellWord::literal(rest))));
                    break;
                } else if self.values.contains(c) {
                    let value = if !rest.is_empty() {
                        ShellWord::literal(rest)
                    } else {
                        match args.get(i) {
                            Some(v) => {
                                i += 1;
                                v.clone()
                            }
                            None => return Ok(Parsed { opts, operands }),
                        }
                    };
                    opts.push((c.to_string(), Some(value)));
                    break;
                } else {
                    return Err(format!("{name} option -{c} not understood"));
                }
            }
        }
        operands.extend(args.get(i..).unwrap_or_default().iter().cloned());
        Ok(Parsed { opts, operands })
    }
}

fn has_word(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
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

/// Finds the command(s) a wrapper program runs. `args` are the words after
/// the program's name.
pub(super) fn unwrap(name: &str, args: &[ShellWord]) -> Wrapped {
    match name {
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
        "env" => env(args),
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
        "script" => script(args),
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
        "parallel" | "sem" => parallel(args),
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
        // These change who runs the command or where: not transparent, an
        // allow rule must cover the wrapper itself too.
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
        // Sandboxes and tools whose long options only take `=value`.
        "firejail" | "valgrind" => with_opts(
            name,
            args,
            Getopt {
                flags: "qvh",
                any_long: true,
                ..GETOPT
            },
            |p| {
                if name == "firejail" {
                    or_shell(name, &p.operands, false)
                } else {
                    runs_argv(&p.operands, false)
                }
            },
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
        "xargs" => xargs(args),
        "find" => find(args),
        _ => Wrapped::No,
    }
}

/// `bash [options] -c SCRIPT [name [args]]`. With a script file operand the
/// shell runs that file, which is its own business (the rules see
/// `bash x.sh`); with neither, or `-s`, it runs whatever its input says.
fn shell(name: &str, args: &[ShellWord]) -> Wrapped {
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

/// `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [COMMAND [ARG]...]`.
fn env(args: &[ShellWord]) -> Wrapped {
    let mut assignments = Vec::new();
    let mut changes_dir = false;
    // `-S` splits its string into more arguments, processed like these.
    let mut words: std::collections::VecDeque<ShellWord> = args.iter().cloned().collect();
    while let Some(w) = words.front() {
        if w.kind != WordKind::Literal {
            return Wrapped::Opaque("env with words only known at run time".into());
        }
        let t = w.text.clone();
        let take = |words: &mut std::collections::VecDeque<ShellWord>, n: usize| {
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

#[cfg(test)]
mod tests {
    use super::super::shell::{ShellPart, analyze};

    /// The commands a line runs, innermost first; `?` for opaque parts.
    fn commands(src: &str) -> Vec<String> {
        analyze(src)
            .parts
            .iter()
            .filter_map(|p| match p {
                ShellPart::Command(c) => Some(c.text()),
                ShellPart::Opaque(_) => Some("?".into()),
                ShellPart::Write(_) => None,
            })
            .collect()
    }

    fn inner(src: &str) -> String {
        commands(src).into_iter().next().unwrap_or_default()
    }

    #[test]
    fn the_wrapped_command_is_found() {
        for (line, want) in [
            ("su -c 'rm -rf /'", "rm -rf /"),
            ("su - root -c 'rm x'", "rm x"),
            ("su root -lc 'rm x'", "rm x"),
            ("runuser -u nobody -- rm x", "rm x"),
            ("script -qc 'rm x' /dev/null", "rm x"),
            ("script -q /dev/null rm x", "rm x"),
            ("flock -w 5 /tmp/l rm x", "rm x"),
            ("flock /tmp/l -c 'rm x'", "rm x"),
            ("chroot --userspec 1:1 / rm x", "rm x"),
            ("strace -fo /dev/null -e trace=all rm x", "rm x"),
            ("ionice -c 3 -n7 rm x", "rm x"),
            ("taskset -ac 0-3 rm x", "rm x"),
            ("chrt -r 5 rm x", "rm x"),
            ("parallel -j4 'rm {}' ::: a b", "rm {}"),
            ("parallel ::: 'rm x'", "rm x"),
            ("busybox rm x", "rm x"),
            ("nice -n 5 rm x", "rm x"),
            ("nice -5 rm x", "rm x"),
            ("stdbuf --output L rm x", "rm x"),
            ("sudo --user root FOO=1 rm x", "FOO=1 rm x"),
            ("env -S 'FOO=1 rm x'", "FOO=1 rm x"),
            ("watch -d rm x", "rm x"),
            ("trap 'rm x' EXIT", "rm x"),
            ("sg wheel -c 'rm x'", "rm x"),
            ("nsenter -t 1 -m rm x", "rm x"),
            ("unshare -rf --mount-proc rm x", "rm x"),
            ("sudo timeout 5 busybox rm -rf x", "rm -rf x"),
        ] {
            assert_eq!(inner(line), want, "{line}");
        }
    }

    #[test]
    fn what_cannot_be_taken_apart_is_opaque() {
        for line in [
            "su -c \"$X\"",
            "su",
            "sudo -s",
            "sudo -i",
            "chroot /",
            "unshare -r",
            "cat cmds | parallel",
            "parallel -a cmds",
            "parallel :::: cmds",
            "flock /tmp/l -c \"$X\"",
            "strace --unknown-option rm x",
            "timeout --sig KILL 5 rm x",
            "nice -n 5 $CMD",
            "busybox sh -c \"$X\"",
            "echo rm x | bash",
            "bash -s",
            "script -q /dev/null",
            "script /dev/null -c 'rm x'",
        ] {
            assert!(analyze(line).has_opaque(), "{line}");
        }
    }

    #[test]
    fn what_runs_nothing_is_not_opaque() {
        for line in [
            "strace -p 1",
            "ionice -p 1",
            "taskset -p 1",
            "chrt -p 1",
            "flock 9",
            "sudo -v",
            "sudo -l",
            "busybox --list",
            "bash --version",
            "bash x.sh",
            "command -v rm",
            "trap - EXIT",
            "timeout 5",
        ] {
            assert!(!analyze(line).has_opaque(), "{line}");
        }
    }

    #[test]
    fn a_login_or_new_root_moves_relative_paths() {
        assert!(analyze("su - -c 'echo x > .bashrc'").changes_dir);
        assert!(analyze("chroot /srv sh -c 'echo x > f'").changes_dir);
        assert!(analyze("sudo -D /etc tee passwd").changes_dir);
        assert!(!analyze("flock /tmp/l -c 'echo x > f'").changes_dir);
    }
}
