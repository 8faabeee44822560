//! The environment of every process Gantry starts for the agent: shell
//! commands, scheduled jobs' commands, MCP stdio servers, language servers.
//!
//! They inherit Gantry's own environment minus its secrets and its own
//! configuration. A variable is hidden when its name (compared in upper
//! case)
//!
//! - contains `API_KEY`, `APIKEY`, `ACCESS_KEY`, `PRIVATE_KEY`, `SECRET`,
//!   `PASSWORD`, `PASSWD` or `CREDENTIAL`,
//! - ends with `_TOKEN` or `_KEY`, or is `TOKEN`,
//! - starts with `GANTRY_`: Gantry's own settings (`GANTRY_STORE`, whose
//!   URL may carry the store's password, `GANTRY_CONTROL_PLANE_STORE`,
//!   `GANTRY_DATA_DIR`, ...) are none of a command's business, and no child
//!   needs one,
//! - is a provider kind's default key variable (`OPENAI_API_KEY`,
//!   `ANTHROPIC_API_KEY`), or
//! - was named as a key variable ([`hide`]: a provider's `api_key_env`,
//!   `gantry exec --api-key-env`);
//!
//! or when its value carries credentials ([`carries_credentials`]), whatever
//! the name: a URL with userinfo (`postgres://user:password@host/db`,
//! `https://TOKEN@host/...`; `HTTP_PROXY=http://user:pw@proxy:3128` too,
//! since the proxy's password is a secret like any other) or a
//! `password=` setting (`host=db password=...`, `...?password=...`).
//! A URL without userinfo (`HTTP_PROXY=http://proxy:3128`) passes.
//!
//! A variable allowed with [`pass`] (`--pass-env NAME`) passes whatever its
//! name or value. Variables set explicitly for the process (a client's
//! `Initialize.env`, an MCP server's configured `env`, a host's per-command
//! credentials) are added after the filter and always pass, to local
//! children only: a host that runs the commands itself (an editor's
//! terminal, `shell/hosted.rs`) gets the explicit variables filtered by name
//! ([`is_hidden`]), and no minted credential.
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

/// The prefix of Gantry's own settings, hidden from children.
const OWN_PREFIX: &str = "GANTRY_";

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

/// Whether Gantry's variable `name` is kept from children by its name
/// alone; [`is_hidden_var`] judges its value too.
pub fn is_hidden(name: &str) -> bool {
    let policy = read();
    hidden_by(&policy, name, None)
}

/// Whether Gantry's variable `name`, set to `value`, is kept from children:
/// by its name ([`is_hidden`]) or because `value` carries credentials.
pub fn is_hidden_var(name: &str, value: &OsStr) -> bool {
    let policy = read();
    hidden_by(&policy, name, Some(value))
}

fn hidden_by(policy: &Policy, name: &str, value: Option<&OsStr>) -> bool {
    if policy.passed.contains(name) {
        return false;
    }
    policy.hidden.contains(name)
        || looks_secret(name)
        || is_own(name)
        || value.is_some_and(carries_credentials)
}

/// Whether `name` is one of Gantry's own settings (`GANTRY_*`).
fn is_own(name: &str) -> bool {
    name.get(..OWN_PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(OWN_PREFIX))
}

/// Whether `value` carries credentials: a URL with userinfo anywhere in it
/// (`scheme://user:password@host`, or `scheme://user@host`, since a token
/// often stands as the user, as in `https://TOKEN@github.com/...`), or a
/// `password=` setting (a libpq `host=... password=...` string, a URL's
/// `?password=` parameter). Bytes, not text: a value need not be UTF-8.
pub fn carries_credentials(value: &OsStr) -> bool {
    let bytes = value.as_encoded_bytes();
    has_userinfo(bytes) || contains_ignore_case(bytes, b"password=")
}

/// Whether some `://` in `bytes` is followed by an authority with an `@`
/// (the authority ends at `/`, `?`, `#` or white space: an `@` in a path,
/// `https://host/@scope/pkg`, is not userinfo).
fn has_userinfo(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    while let Some(at) = find(rest, b"://") {
        rest = &rest[at + 3..];
        let authority = rest
            .iter()
            .position(|b| matches!(b, b'/' | b'?' | b'#') || b.is_ascii_whitespace())
            .map_or(rest, |end| &rest[..end]);
        if authority.contains(&b'@') {
            return true;
        }
    }
    false
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains_ignore_case(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

/// Whether `name` matches the secret patterns or a provider's default key
/// variable, before any allow list (`GANTRY_*` names are hidden apart:
/// they are settings, not necessarily secrets).
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
        for (name, value) in std::env::vars_os() {
            if hides(&policy, &name, &value) {
                cmd.env_remove(&name);
            }
        }
    }
    cmd.envs(explicit);
}

/// Whether Gantry's variable `name=value` is kept from children.
fn hides(policy: &Policy, name: &OsStr, value: &OsStr) -> bool {
    match name.to_str() {
        Some(name) => hidden_by(policy, name, Some(value)),
        // A name that is not UTF-8 cannot match the ASCII patterns, but a
        // value carrying credentials is hidden all the same.
        None => carries_credentials(value),
    }
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
            .filter(|(name, value)| !hides(&policy, name, value))
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
    fn gantry_settings_are_hidden() {
        for own in [
            "GANTRY_STORE",
            "GANTRY_CONTROL_PLANE_STORE",
            "gantry_data_dir",
        ] {
            assert!(is_hidden(own), "{own}");
        }
        for plain in ["GANTRY", "MY_GANTRY_THING", "GANTRYX"] {
            assert!(!is_hidden(plain), "{plain}");
        }
    }

    #[test]
    fn values_with_credentials() {
        for secret in [
            "postgres://u:secret@h/db",
            "postgresql://gantry@db.internal/gantry",
            "https://user:tok@example.com",
            "https://ghp_token@github.com/o/r.git",
            "http://user:pw@proxy:3128",
            "jdbc:postgresql://u:p@h:5432/db",
            "first https://a.example https://u:p@b.example/x",
            "postgres://h/db?sslmode=require&password=pw",
            "host=db user=u password=pw",
            "-Dhttp.proxyPassword=pw",
        ] {
            assert!(carries_credentials(OsStr::new(secret)), "{secret}");
        }
        for plain in [
            "http://proxy:3128",
            "https://registry.example.com/@scope/pkg",
            "https://example.com/?q=a@b",
            "https://example.com/#a@b",
            "user@example.com",
            "mailto:user@example.com",
            "/usr/local/bin:/usr/bin",
            "",
        ] {
            assert!(!carries_credentials(OsStr::new(plain)), "{plain}");
        }
    }

    #[test]
    fn a_value_hides_any_name_unless_passed() {
        let url = OsStr::new("https://user:tok@example.com");
        assert!(is_hidden_var("GANTRY_TEST_UPSTREAM", url));
        assert!(is_hidden_var("GANTRY_TEST_X", OsStr::new("plain")));
        assert!(is_hidden_var("UPSTREAM_FOR_TEST", url));
        assert!(!is_hidden("UPSTREAM_FOR_TEST"), "the name alone is plain");
        assert!(!is_hidden_var(
            "UPSTREAM_FOR_TEST",
            OsStr::new("https://example.com")
        ));
        pass(["PASSED_UPSTREAM_FOR_TEST", "GANTRY_TEST_PASSED_SETTING"]);
        assert!(!is_hidden_var("PASSED_UPSTREAM_FOR_TEST", url));
        assert!(!is_hidden("GANTRY_TEST_PASSED_SETTING"));
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
