//! Choosing the engine's store: `--store URL`, else `store = "URL"` in the
//! config file, else the SQLite file in the data dir; and its password,
//! kept out of URLs: `--store-password-file FILE`, else what sqlx-postgres
//! finds itself (`PGPASSWORD`, `PGPASSFILE`, `~/.pgpass`).

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use gantry_store::postgres::{Claim, has_password, redacted};
use gantry_store::sqlite::SECRET_KEY_FILE;
use gantry_store::{Opening, PostgresStore, SqliteStore, Store};

/// Where a store lives, parsed from its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL database (the URL as given, password and all).
    Postgres(String),
}

impl Location {
    /// Reads a `--store` value; errors say what is accepted.
    pub(crate) fn parse(url: &str) -> Result<Self> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(Self::Postgres(url.to_owned()));
        }
        if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .filter(|p| !p.is_empty())
        {
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        bail!(
            "unknown store {:?}: use postgres://USER@HOST[:PORT]/DATABASE or sqlite://FILE",
            redacted(url)
        )
    }
}

/// A store's password read from `--store-password-file`: never put in a
/// URL, and never shown (its `Debug` says nothing of it).
pub(crate) struct Password(String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(..)")
    }
}

impl Password {
    /// The password for the store at `location` from `file`, if one is
    /// named. Refused for a SQLite store (it has none), and for a URL that
    /// carries a password already (which one would win is not obvious).
    pub(crate) fn for_store(location: &Location, file: Option<&Path>) -> Result<Option<Self>> {
        let Some(file) = file else {
            return Ok(None);
        };
        match location {
            Location::Sqlite(path) => bail!(
                "--store-password-file is for a PostgreSQL store; the store is the SQLite file {}",
                path.display()
            ),
            Location::Postgres(url) if has_password(url) => bail!(
                "the store URL {} carries a password and --store-password-file names another: \
                 take the password out of the URL",
                redacted(url)
            ),
            Location::Postgres(_) => Self::read(file).map(Some),
        }
    }

    /// Reads `path`: its content, less one trailing newline. A file that
    /// group or others may access is refused, as libpq refuses such a
    /// passfile: a password is only as private as its file.
    pub(crate) fn read(path: &Path) -> Result<Self> {
        let mut file = std::fs::File::open(path)
            .with_context(|| format!("cannot open the password file {}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Checked on the open file, so it is the file that is read.
            let mode = file
                .metadata()
                .with_context(|| format!("cannot read the password file {}", path.display()))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                bail!(
                    "the password file {} may be accessed by other users (mode {:o}): \
                     make it private to its owner (chmod 600)",
                    path.display(),
                    mode & 0o777
                );
            }
        }
        let mut text = String::new();
        // The error says why (not UTF-8, an I/O error), never what was read.
        file.read_to_string(&mut text)
            .with_context(|| format!("cannot read the password file {}", path.display()))?;
        let password = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text);
        if password.is_empty() {
            bail!("the password file {} is empty", path.display());
        }
        Ok(Self(password.to_owned()))
    }

    /// The password itself, to log in with; nowhere else.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

/// Warns once when an argument of this process is a URL with a password:
/// every process on the machine can read a command line
/// (`/proc/PID/cmdline`). The URLs are named without their passwords.
pub(crate) fn warn_of_passwords_in_args() {
    let shown = passwords_in(
        std::env::args_os()
            .skip(1)
            .filter_map(|a| a.into_string().ok()),
    );
    if !shown.is_empty() {
        eprintln!(
            "gantry: warning: the command line carries a password ({}): it is visible to \
             other processes in /proc/{}/cmdline; give a store's password with \
             --store-password-file FILE or PGPASSFILE instead",
            shown.join(", "),
            std::process::id()
        );
    }
}

/// The arguments among `args` that are URLs with a password, redacted.
fn passwords_in(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        // A URL has no white space; a prompt may, and is not judged.
        .filter(|a| a.contains("://") && !a.contains(char::is_whitespace) && has_password(a))
        .map(|a| redacted(&a))
        .collect()
}

/// An open store, with what keeps it this process's own.
pub(crate) struct Opened {
    /// The store.
    pub store: Arc<dyn Store>,
    /// How to name it in messages (no password).
    pub name: String,
    /// PostgreSQL's claim on the database (SQLite's is the data dir's lock).
    pub claim: Option<Claim>,
    /// The store again, while it is still being opened in the background.
    pub opening: Option<Arc<Opening>>,
}

/// When the store is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    /// Before `open` returns: its errors are the caller's at once.
    Now,
    /// A SQLite file in the background (see [`Opening`]), for a command
    /// whose first work (a model request) need not wait for it; a
    /// PostgreSQL database is still opened at once (it must be claimed).
    InBackground,
}

/// Opens the store at `location`, with `password` if given; `data_dir`
/// holds the key API keys are sealed with when the store is not a file
/// beside it.
pub(crate) async fn open(
    location: &Location,
    password: Option<&Password>,
    data_dir: &Path,
    when: When,
) -> Result<Opened> {
    match location {
        Location::Sqlite(path) if when == When::InBackground => {
            let opening = Arc::new(SqliteStore::open_in_background(path.clone()));
            Ok(Opened {
                store: opening.clone(),
                name: path.display().to_string(),
                claim: None,
                opening: Some(opening),
            })
        }
        Location::Sqlite(path) => {
            let store = SqliteStore::open(path)
                .await
                .with_context(|| format!("cannot open the store {}", path.display()))?;
            Ok(Opened {
                store: Arc::new(store),
                name: path.display().to_string(),
                claim: None,
                opening: None,
            })
        }
        Location::Postgres(url) => {
            let name = redacted(url);
            let store = PostgresStore::open_with_password(
                url,
                password.map(Password::expose),
                &data_dir.join(SECRET_KEY_FILE),
            )
            .await
            .with_context(|| format!("cannot open the store {name}"))?;
            let claim = store
                .claim()
                .await
                .with_context(|| format!("cannot use the store {name}"))?;
            Ok(Opened {
                store: Arc::new(store),
                name,
                claim: Some(claim),
                opening: None,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            Location::parse("postgres://u:p@h/db").unwrap(),
            Location::Postgres("postgres://u:p@h/db".into())
        );
        assert_eq!(
            Location::parse("sqlite:///var/lib/g.db").unwrap(),
            Location::Sqlite("/var/lib/g.db".into())
        );
        let err = Location::parse("mysql://u:hunter2@h/db")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unknown store") && !err.contains("hunter2"),
            "{err}"
        );
        assert!(Location::parse("sqlite://").is_err());
    }

    /// A private file holding `content`.
    fn password_file(dir: &Path, content: &str, mode: u32) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("store.password");
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_password_file_loses_one_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        for (content, password) in [
            ("s3cret\n", "s3cret"),
            ("s3cret", "s3cret"),
            ("s3cret\r\n", "s3cret"),
            ("s3cret \n\n", "s3cret \n"),
        ] {
            let path = password_file(dir.path(), content, 0o600);
            assert_eq!(
                Password::read(&path).unwrap().expose(),
                password,
                "{content:?}"
            );
        }
        let path = password_file(dir.path(), "\n", 0o400);
        let err = format!("{:#}", Password::read(&path).unwrap_err());
        assert!(err.contains("is empty"), "{err}");
    }

    #[test]
    fn a_password_file_others_may_read_is_refused_without_showing_it() {
        let dir = tempfile::tempdir().unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            let path = password_file(dir.path(), "hunter2\n", mode);
            let err = format!("{:#}", Password::read(&path).unwrap_err());
            assert!(
                err.contains("chmod 600") && err.contains(&format!("{mode:o}")),
                "{err}"
            );
            assert!(!err.contains("hunter2"), "{err}");
        }
        let missing = format!(
            "{:#}",
            Password::read(&dir.path().join("none")).unwrap_err()
        );
        assert!(
            missing.contains("cannot open the password file"),
            "{missing}"
        );
        let path = password_file(dir.path(), "hunter2", 0o600);
        let password = Password::read(&path).unwrap();
        assert_eq!(format!("{password:?}"), "Password(..)");
    }

    #[test]
    fn a_password_file_is_for_a_postgres_url_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = password_file(dir.path(), "hunter2\n", 0o600);
        let none = Location::parse("postgres://gantry@db/gantry").unwrap();
        assert!(Password::for_store(&none, None).unwrap().is_none());
        let password = Password::for_store(&none, Some(&path)).unwrap().unwrap();
        assert_eq!(password.expose(), "hunter2");

        let both = Location::parse("postgres://gantry:inurl@db/gantry").unwrap();
        let err = format!("{:#}", Password::for_store(&both, Some(&path)).unwrap_err());
        assert!(
            err.contains("postgres://gantry@db/gantry") && !err.contains("inurl"),
            "{err}"
        );
        let sqlite = Location::parse("sqlite:///tmp/g.db").unwrap();
        let err = format!(
            "{:#}",
            Password::for_store(&sqlite, Some(&path)).unwrap_err()
        );
        assert!(err.contains("SQLite"), "{err}");
    }

    #[test]
    fn urls_with_passwords_among_arguments() {
        let args = [
            "exec",
            "--store",
            "postgres://gantry:hunter2@db/gantry",
            "--store=postgres://u:pw2@h/db",
            "postgres://gantry@db/gantry",
            "fix https://u:pw3@example.com please",
            "nats://n:pw4@127.0.0.1:4222",
        ]
        .map(String::from);
        assert_eq!(
            passwords_in(args),
            [
                "postgres://gantry@db/gantry",
                "--store=postgres://u@h/db",
                "nats://n@127.0.0.1:4222"
            ]
        );
    }
}
