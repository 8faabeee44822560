//! Running the user's login shell once and turning what it leaves behind
//! (functions, aliases, options, exported variables) into a bash file that a
//! plain `bash -c` sources first, through `BASH_ENV`.
//!
//! The profile runs as the user's own terminal would run it: as the user,
//! in `$HOME`, with the environment commands get (Gantry's own minus its
//! keys, plus the engine's command variables), but in the sandbox the
//! snapshot's caller chose (`snapshot.rs`). Its output and errors never
//! reach a command's output.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sandbox::{PreparedSandbox, child_env};

/// How long the profile may take before the capture is given up.
pub(super) const CAPTURE_TIMEOUT: Duration = Duration::from_secs(10);

/// Variables the shell itself sets or that belong to one process; never
/// carried from the capture into commands.
const SHELL_OWNED: [&str; 7] = ["PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", "ENV", "PS1"];

/// `set -o` options a command must not inherit from a profile: they change
/// how the command's own script runs (`errexit`, `nounset`, tracing), or only
/// make sense in an interactive shell.
const UNSAFE_SET_OPTIONS: [&str; 12] = [
    "errexit",
    "nounset",
    "xtrace",
    "verbose",
    "noexec",
    "monitor",
    "history",
    "onecmd",
    "posix",
    "privileged",
    "emacs",
    "vi",
];

/// `shopt` options that are read-only (setting them is an error) or only
/// describe the capturing shell.
const OWN_SHOPT_OPTIONS: [&str; 3] = ["login_shell", "restricted_shell", "progcomp_alias"];

/// The login shells a snapshot is taken of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Shell {
    /// Functions, aliases, options and exports are all kept.
    Bash,
    /// Only exported variables are kept: commands run in bash, which cannot
    /// read zsh's functions or options.
    Zsh,
}

impl Shell {
    /// The user's login shell from `SHELL` (bash unless it names zsh, and
    /// bash too when zsh is named but not installed).
    pub(super) fn of(env: &BTreeMap<OsString, OsString>) -> (Self, PathBuf) {
        if let Some(path) = env.get(OsStr::new("SHELL")).map(PathBuf::from)
            && path.file_name() == Some(OsStr::new("zsh"))
            && path.is_file()
        {
            return (Shell::Zsh, path);
        }
        (Shell::Bash, PathBuf::from("bash"))
    }

    /// The files whose change makes a snapshot stale.
    pub(super) fn profile_files(self, home: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = match self {
            Shell::Bash => vec![
                "/etc/profile".into(),
                "/etc/bash.bashrc".into(),
                home.join(".bash_profile"),
                home.join(".bash_login"),
                home.join(".profile"),
                home.join(".bashrc"),
            ],
            Shell::Zsh => vec![
                "/etc/zshenv".into(),
                "/etc/zsh/zshenv".into(),
                "/etc/zprofile".into(),
                "/etc/zsh/zprofile".into(),
                home.join(".zshenv"),
                home.join(".zprofile"),
                home.join(".zshrc"),
                home.join(".zlogin"),
            ],
        };
        files.push("/etc/profile.d".into());
        files
    }

    fn name(self) -> &'static str {
        match self {
            Shell::Bash => "bash",
            Shell::Zsh => "zsh",
        }
    }

    /// The script run in the login shell: the interactive rc file too
    /// (where most people put their setup), then the state, after markers
    /// (`$1`) that tell it apart from anything the profile printed.
    fn script(self) -> &'static str {
        match self {
            // `.bashrc` is sourced unless the login file bash read (the first
            // of the three) mentions it: most that do source it, and a
            // profile's cost should be paid once.
            Shell::Bash => concat!(
                r#"__g=; for __f in "$HOME/.bash_profile" "$HOME/.bash_login" "$HOME/.profile"; do "#,
                r#"[ -r "$__f" ] && { __g=$__f; break; }; done; "#,
                r#"case "${__g:+$(< "$__g")}" in *.bashrc*) ;; "#,
                r#"*) [ -r "$HOME/.bashrc" ] && . "$HOME/.bashrc" </dev/null ;; esac; "#,
                "unset __f __g; ",
                r#"printf '\n%s-begin\n' "$1"; "#,
                "declare -f; alias -p; shopt -p; set +o; ",
                r#"printf '%s-env\n' "$1"; env -0"#
            ),
            Shell::Zsh => concat!(
                r#"[[ -r "${ZDOTDIR:-$HOME}/.zshrc" ]] && . "${ZDOTDIR:-$HOME}/.zshrc" </dev/null; "#,
                r#"printf '\n%s-begin\n%s-env\n' "$1" "$1"; env -0"#
            ),
        }
    }
}

/// Why a capture failed, in one line for the thread.
pub(super) type CaptureError = String;

/// Runs `shell`'s login profile with `env` (what commands get), inside
/// `jail` if given, and returns the snapshot's text.
pub(super) async fn capture(
    shell: Shell,
    program: &Path,
    env: &BTreeMap<OsString, OsString>,
    jail: Option<&PreparedSandbox>,
) -> Result<Vec<u8>, CaptureError> {
    let nonce = nonce();
    // The profile runs in $HOME, as in a new terminal; never in a workspace
    // whose files it might pick up.
    let home = env
        .get(OsStr::new("HOME"))
        .map(PathBuf::from)
        .filter(|h| h.is_dir())
        .unwrap_or_else(|| PathBuf::from("/"));
    let args = [
        "-l",
        "-c",
        shell.script(),
        "gantry-shell-snapshot",
        nonce.as_str(),
    ];
    // Whatever the profile left running in its group (it ended, or ran out
    // of time) goes with it.
    let ran = super::run_to_end(
        program.as_os_str(),
        &args,
        env.clone(),
        &home,
        jail,
        CAPTURE_TIMEOUT,
    )
    .await
    .map_err(|e| format!("could not start {}: {e}", program.display()))?;
    let Some(output) = ran else {
        return Err(format!(
            "the {} profile took longer than {} s",
            shell.name(),
            CAPTURE_TIMEOUT.as_secs()
        ));
    };
    let stderr = first_line(&output.stderr);
    if !output.stderr.is_empty() {
        // What the profile printed is the user's business; its size and
        // first line are enough to find it.
        tracing::debug!(
            bytes = output.stderr.len(),
            first_line = %stderr,
            "the login profile wrote to stderr while Gantry snapshotted it"
        );
    }
    if !output.status.success() {
        let code = output
            .status
            .code()
            .map_or_else(|| "a signal".to_owned(), |c| c.to_string());
        let said = if stderr.is_empty() {
            String::new()
        } else {
            format!(": {stderr}")
        };
        return Err(format!("{} -l exited with {code}{said}", shell.name()));
    }
    let (declarations, exported) = split(&output.stdout, &nonce).ok_or_else(|| {
        format!(
            "{} -l ended before printing its state (does the profile call `exit`?)",
            shell.name()
        )
    })?;
    Ok(render(shell, declarations, &parse_env(exported), env))
}

/// The declarations (bash syntax) and the `env -0` block after the markers.
fn split<'a>(stdout: &'a [u8], nonce: &str) -> Option<(&'a [u8], &'a [u8])> {
    let begin = format!("\n{nonce}-begin\n");
    let env = format!("{nonce}-env\n");
    let start = find(stdout, begin.as_bytes())? + begin.len();
    let rest = &stdout[start..];
    let mid = find(rest, env.as_bytes())?;
    Some((&rest[..mid], &rest[mid + env.len()..]))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse_env(block: &[u8]) -> BTreeMap<OsString, OsString> {
    block
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let eq = entry.iter().position(|b| *b == b'=')?;
            Some((
                OsStr::from_bytes(&entry[..eq]).to_owned(),
                OsStr::from_bytes(&entry[eq + 1..]).to_owned(),
            ))
        })
        .collect()
}

/// The snapshot file: a header saying what it holds, the declarations with
/// unsafe options left out, and the variables the profile set or changed
/// (secret-looking ones left out, as from every child's environment).
fn render(
    shell: Shell,
    declarations: &[u8],
    after: &BTreeMap<OsString, OsString>,
    before: &BTreeMap<OsString, OsString>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(declarations.len() + 1024);
    out.extend_from_slice(
        format!(
            "# Gantry shell snapshot of the {} login profile: its functions, aliases and\n\
             # options, and the variables it exported or changed. Secret-looking variables\n\
             # are left out. Sourced through BASH_ENV before each command.\n\
             unset BASH_ENV\n",
            shell.name()
        )
        .as_bytes(),
    );
    for line in declarations.split_inclusive(|b| *b == b'\n') {
        if keeps(line) {
            out.extend_from_slice(line);
        }
    }
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    if shell == Shell::Bash {
        // Aliases are off in non-interactive shells; the profile's are the point.
        out.extend_from_slice(b"shopt -s expand_aliases\n");
    }
    for (name, value) in after {
        let Some(name) = name.to_str().filter(|n| is_identifier(n)) else {
            continue;
        };
        if SHELL_OWNED.contains(&name)
            || child_env::is_hidden_var(name, value)
            || before.get(OsStr::new(name)) == Some(value)
        {
            continue;
        }
        out.extend_from_slice(format!("export {name}=").as_bytes());
        quote_into(value.as_bytes(), &mut out);
        out.push(b'\n');
    }
    out
}

/// Whether a declaration line is kept: every line but the `set -o` and
/// `shopt` options a command must not get.
fn keeps(line: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(line) else {
        return true;
    };
    let mut words = text.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (Some("set"), Some("-o" | "+o"), Some(option)) => !UNSAFE_SET_OPTIONS.contains(&option),
        (Some("shopt"), Some("-s" | "-u"), Some(option)) => !OWN_SHOPT_OPTIONS.contains(&option),
        _ => true,
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// `value` in single quotes, each `'` written as `'\''`.
fn quote_into(value: &[u8], out: &mut Vec<u8>) {
    out.push(b'\'');
    for &b in value {
        if b == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(b);
        }
    }
    out.push(b'\'');
}

fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars().take(200).collect()
}

/// A marker no profile prints by chance.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    format!("gantry-snapshot-{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<OsString, OsString> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_what_the_profile_changed_is_exported_and_quoted_for_bash() {
        let before = env(&[("PATH", "/usr/bin"), ("HOME", "/h")]);
        let after = env(&[
            ("PATH", "/h/.pyenv/shims:/usr/bin"),
            ("HOME", "/h"),
            ("GREETING", "it's here"),
            ("SHLVL", "2"),
            ("MY_API_KEY", "sk-from-profile"),
            ("BASH_FUNC_f%%", "() { :; }"),
        ]);
        let text = String::from_utf8(render(Shell::Bash, b"", &after, &before)).unwrap();
        assert!(
            text.contains("export PATH='/h/.pyenv/shims:/usr/bin'\n"),
            "{text}"
        );
        assert!(text.contains("export GREETING='it'\\''s here'\n"), "{text}");
        assert!(!text.contains("HOME="), "{text}");
        assert!(!text.contains("SHLVL"), "{text}");
        assert!(!text.contains("sk-from-profile"), "{text}");
        assert!(!text.contains("BASH_FUNC"), "{text}");
        assert!(text.contains("shopt -s expand_aliases\n"), "{text}");
    }

    #[test]
    fn options_that_would_change_how_a_command_runs_are_left_out() {
        let declarations = b"set -o errexit\nset +o xtrace\nset -o braceexpand\n\
                             shopt -s login_shell\nshopt -s extglob\nalias ll='ls -l'\n";
        let text =
            String::from_utf8(render(Shell::Bash, declarations, &env(&[]), &env(&[]))).unwrap();
        assert!(
            !text.contains("errexit") && !text.contains("xtrace"),
            "{text}"
        );
        assert!(!text.contains("login_shell"), "{text}");
        assert!(text.contains("set -o braceexpand\n"), "{text}");
        assert!(text.contains("shopt -s extglob\n"), "{text}");
        assert!(text.contains("alias ll='ls -l'\n"), "{text}");
    }

    #[test]
    fn the_state_is_found_after_whatever_the_profile_printed() {
        let out = b"welcome!\nno-begin here\n\nn-begin\nf () { :; }\nn-env\nA=1\0B=x=y\0";
        let (decl, env) = split(out, "n").unwrap();
        assert_eq!(decl, b"f () { :; }\n");
        let parsed = parse_env(env);
        assert_eq!(parsed[OsStr::new("B")], OsStr::new("x=y"));
        assert_eq!(split(b"no markers", "n"), None);
    }
}
