//! The environment of every process Gantry starts for the agent: shell
//! commands, scheduled jobs' commands, MCP stdio servers, language servers.
//!
//! They inherit Gantry's own environment minus its secrets. A variable is
//! hidden when its name (compared in upper case)
//!
//! - contains `API_KEY`, `APIKEY`, `ACCESS_KEY`, `PRIVATE_KEY`, `SECRET`,
//!   `PASSWORD`, `PASSWD` or `CREDENTIAL`,
//! - ends with `_TOKEN` or `_KEY`, or is `TOKEN`,
//! - is a provider kind's default key variable (`OPENAI_API_KEY`,
//!   `ANTHROPIC_API_KEY`), or
//! - was named as a key variable ([`hide`]: a provider's `api_key_env`,
//!   `gantry exec --api-key-env`),
//!
//! unless it was allowed with [`pass`] (`--pass-env NAME`). Variables set
//! explicitly for the process (a client's `Initialize.env`, an MCP server's
//! configured `env`, a host's per-command credentials) are added after the
//! filter and always pass, to local children only: a host that runs the
//! commands itself (an editor's terminal, `shell/hosted.rs`) gets the
//! explicit variables filtered too, and no minted credential.
//!
//! The policy is process-wide, like the environment it filters.
//! [`apply`] is the one place a child's environment is decided.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::sync::RwLock;

use gantry_types::ProviderKind;

/// Name fragments that mark a variable as secret.
const SECRET_PARTS: [&str; 8] = [
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
];

/// Name endings that mark a variable as secret.
const SECRET_SUFFIXES: [&str; 2] = ["_TOKEN", "_KEY"];

/// Variables never hidden by [`hide`]: a provider configured with
/// `api_key_env = "PATH"` must not break every command.
const ESSENTIAL: [&str; 10] = [
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "PWD", "TZ",
];

/// The process-wide policy: names hidden on top of the patterns, and names
/// allowed through despite them.
struct Policy {
    hidden: BTreeSet<String>,
    passed: BTreeSet<String>,
}

static POLICY: RwLock<Policy> = RwLock::new(Policy {
    hidden: BTreeSet::new(),
    passed: BTreeSet::new(),
});

fn read() -> std::sync::RwLockReadGuard<'static, Policy> {
    // The sets are never left half-updated, so a poisoned lock is still sound.
    POLICY.read().unwrap_or_else(|p| p.into_inner())
}

fn write() -> std::sync::RwLockWriteGuard<'static, Policy> {
    POLICY.write().unwrap_or_else(|p| p.into_inner())
}

/// Hides `name` from children too (a variable a key is read from, whatever
/// it is called). Essential variables (`PATH`, `HOME`, ...) are never hidden.
pub fn hide(name: &str) {
    if name.is_empty() || ESSENTIAL.contains(&name) {
        return;
    }
    write().hidden.insert(name.to_owned());
}

/// Lets `names` through to children even if they look secret
/// (`--pass-env NAME`). Adds to the names passed before.
pub fn pass<I, S>(names: I)
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut policy = write();
    for name in names {
        let name = name.into();
        if !name.is_empty() {
            policy.passed.insert(name);
        }
    }
}

/// Whether Gantry's variable `name` is kept from children.
pub fn is_hidden(name: &str) -> bool {
    let policy = read();
    hidden_by(&policy, name)
}

fn hidden_by(policy: &Policy, name: &str) -> bool {
    if policy.passed.contains(name) {
        return false;
    }
    policy.hidden.contains(name) || looks_secret(name)
}

/// Whether `name` matches the deny patterns or a provider's default key
/// variable, before any allow list.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_PARTS.iter().any(|p| upper.contains(p))
        || SECRET_SUFFIXES.iter().any(|s| upper.ends_with(s))
        || upper == "TOKEN"
        || [ProviderKind::OpenaiChat, ProviderKind::Anthropic]
            .iter()
            .any(|k| k.default_api_key_env() == upper)
}

/// Sets up `cmd`'s environment: Gantry's own minus the hidden variables,
/// then `explicit` on top (always passed, even with secret-looking names).
/// Call it before any other `env` call on `cmd`.
pub fn apply<I, K, V>(cmd: &mut std::process::Command, explicit: I)
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    {
        let policy = read();
        for (name, _) in std::env::vars_os() {
            // A name that is not UTF-8 cannot match the ASCII patterns, but
            // is not ours to judge either: keep it.
            if name.to_str().is_some_and(|n| hidden_by(&policy, n)) {
                cmd.env_remove(&name);
            }
        }
    }
    cmd.envs(explicit);
}

/// The environment [`apply`] gives a child: Gantry's own minus the hidden
/// variables, then `explicit` on top.
pub fn resolved<I, K, V>(explicit: I) -> BTreeMap<OsString, OsString>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let mut env: BTreeMap<OsString, OsString> = {
        let policy = read();
        std::env::vars_os()
            .filter(|(name, _)| !name.to_str().is_some_and(|n| hidden_by(&policy, n)))
            .collect()
    };
    env.extend(
        explicit
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned())),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        for secret in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "openai_api_key",
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "DB_PASSWORD",
            "MY_SECRET_THING",
            "SIGNING_KEY",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "TOKEN",
        ] {
            assert!(looks_secret(secret), "{secret}");
        }
        for plain in [
            "PATH",
            "HOME",
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "SSH_AUTH_SOCK",
            "LANG",
            "CARGO_HOME",
        ] {
            assert!(!looks_secret(plain), "{plain}");
        }
    }

    #[test]
    fn hide_and_pass() {
        // Names of their own: the policy is process-wide and tests share it.
        hide("GANTRY_TEST_MYKEYVAR");
        hide("PATH");
        assert!(is_hidden("GANTRY_TEST_MYKEYVAR"));
        assert!(!is_hidden("PATH"));
        assert!(is_hidden("GANTRY_TEST_PASSED_TOKEN"));
        pass(["GANTRY_TEST_PASSED_TOKEN"]);
        assert!(!is_hidden("GANTRY_TEST_PASSED_TOKEN"));
    }
}
