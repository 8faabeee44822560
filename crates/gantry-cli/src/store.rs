//! Choosing the engine's store: `--store URL`, else `store = "URL"` in the
//! config file, else the SQLite file in the data dir.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use gantry_store::postgres::{Claim, redacted};
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

/// Opens the store at `location`; `data_dir` holds the key API keys are
/// sealed with when the store is not a file beside it.
pub(crate) async fn open(location: &Location, data_dir: &Path, when: When) -> Result<Opened> {
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
            let store = PostgresStore::open(url, &data_dir.join(SECRET_KEY_FILE))
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
}
