//! The commands the `untrusted` approval policy runs without asking: known
//! read-only commands with static arguments, as codex's "known safe" list.
//!
//! A command line is safe when every part is a safe command: no file
//! writes, nothing opaque, no variable assignments, every word static, and
//! each program on the list below with none of its writing or executing
//! options. Pipelines and lists of safe commands are safe (`git log | head`).

use crate::shell::{ShellAnalysis, ShellPart, SimpleCommand, WordKind};

/// Programs that only read, whatever their arguments.
const ALWAYS_SAFE: &[&str] = &[
    "cat",
    "cd",
    "echo",
    "false",
    "head",
    "ls",
    "nl",
    "pwd",
    "tail",
    "true",
    "wc",
    "whoami",
    "id",
    "uname",
    "which",
    "type",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "cut",
    "tr",
    "uniq",
    "rev",
    "seq",
    "cmp",
    "diff",
    "comm",
    "printenv",
    "grep",
    "egrep",
    "fgrep",
    "printf",
    "test",
    "[",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "column",
    "expr",
];

/// Whether every part of an analysed command line is known to be safe.
pub fn is_safe_command_line(analysis: &ShellAnalysis) -> bool {
    !analysis.parts.is_empty()
        && analysis.parts.iter().all(|part| match part {
            ShellPart::Command(cmd) => {
                // A wrapper such as `timeout 5 ls` is as safe as what it
                // runs, which is a part of its own; `bash -c` and `eval`
                // included.
                cmd.transparent || is_safe_command(cmd)
            }
            ShellPart::Write(_) | ShellPart::Opaque(_) => false,
        })
}

/// Whether one simple command is known to be read-only.
pub fn is_safe_command(cmd: &SimpleCommand) -> bool {
    if !cmd.assignments.is_empty() || cmd.argv.iter().any(|w| w.kind == WordKind::Dynamic) {
        return false;
    }
    let Some(program) = cmd.program() else {
        return false;
    };
    let args: Vec<&str> = cmd.argv.iter().skip(1).map(|w| w.text.as_str()).collect();
    // Only bare names: `./ls` or `/tmp/ls` may be anything.
    if program.contains('/') {
        return false;
    }
    if ALWAYS_SAFE.contains(&program) {
        return true;
    }
    // The commands below have options that write or run programs; a glob
    // could expand to a file named like one (`-delete`).
    if cmd.argv.iter().any(|w| w.glob) {
        return false;
    }
    match program {
        "find" => !args.iter().any(|a| {
            matches!(
                *a,
                "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-delete"
                    | "-fls"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
            )
        }),
        // `--pre` runs a program on every file; `-z` runs decompressors.
        "rg" => !args.iter().any(|a| {
            a.starts_with("--pre")
                || a.starts_with("--hostname-bin")
                || *a == "--search-zip"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('z'))
        }),
        "sort" => !args.iter().any(|a| {
            *a == "-o" || a.starts_with("--output") || a.starts_with("--compress-program")
        }),
        // Only `sed -n 'N[,M]p' [file]`: sed can write (`w`, `-i`) and run (`e`).
        "sed" => {
            args.len() <= 3
                && args.first() == Some(&"-n")
                && args.get(1).is_some_and(|s| is_line_range_print(s))
        }
        "git" => is_safe_git(&args),
        "cargo" => matches!(args.as_slice(), ["--version"] | ["-V"]),
        "hostname" => args.is_empty(),
        _ => false,
    }
}

fn is_line_range_print(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let mut parts = range.split(',');
    let first = parts.next().unwrap_or_default();
    let second = parts.next();
    parts.next().is_none()
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_digit())
        && second.is_none_or(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit()))
}

/// `git status|log|diff|show|branch|...` without options that write files
/// or run programs. Global options (`-c`, `-C`, `--exec-path`) are refused
/// because `-c` can set an alias or pager to anything.
fn is_safe_git(args: &[&str]) -> bool {
    let Some((sub, rest)) = args.split_first() else {
        return false;
    };
    let reads = matches!(
        *sub,
        "status"
            | "log"
            | "diff"
            | "show"
            | "blame"
            | "ls-files"
            | "rev-parse"
            | "shortlog"
            | "describe"
            | "grep"
            | "cat-file"
    );
    let branch_listing = *sub == "branch"
        && rest.iter().all(|a| {
            matches!(
                *a,
                "-a" | "-r" | "-v" | "-vv" | "--list" | "--show-current" | "--all" | "--remotes"
            )
        });
    (reads || branch_listing)
        && !rest.iter().any(|a| {
            a.starts_with("--output")
                || a.starts_with("--ext-diff")
                || a.starts_with("--textconv")
                || a.starts_with("--exec")
                || a.starts_with("--open-files-in-pager")
                || *a == "-O"
        })
}
