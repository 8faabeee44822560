//! A new database as bytes made ahead of time: writing them is all it takes
//! to make a new file, where building the schema has SQLite parse and run
//! every migration (most of the work of a first start on a new data dir).
//!
//! An image comes with a manifest, made with it by [`make`]: the migrations
//! it holds (version and checksum) and where their install times are. A
//! store uses its image only while the manifest names exactly its
//! migrator's migrations, so a stale image costs speed, never a wrong
//! schema; each store has a test that fails while its image is stale.
//! The install times are written as a placeholder and set to the time
//! the file is made.

use std::fmt::Write as _;
use std::path::Path;
use std::time::SystemTime;

use sqlx::migrate::Migrator;

use crate::{OpenError, batch, create};

/// The install time an image holds until a file is made from it: the
/// width of SQLite's `CURRENT_TIMESTAMP` text, which replaces it.
pub(crate) const PLACEHOLDER: &str = "0000-00-00 00:00:00";

/// A new database file made by [`make`] from a migrator, and its manifest.
#[derive(Debug, Clone, Copy)]
pub struct Image {
    file: &'static [u8],
    manifest: &'static str,
}

impl Image {
    /// An image from the two parts [`make`] returns, as embedded in a
    /// store's binary (`include_bytes!`, `include_str!`).
    pub const fn new(file: &'static [u8], manifest: &'static str) -> Self {
        Self { file, manifest }
    }

    /// The file's bytes with their install times set to `now`, if the image
    /// holds exactly `migrator`'s migrations; `None` if it is stale.
    pub(crate) fn stamped(&self, migrator: &Migrator, now: SystemTime) -> Option<Vec<u8>> {
        let places = self.install_times_if_holding(migrator)?;
        let mut file = self.file.to_vec();
        let stamp = utc_timestamp(now);
        for at in places {
            let field = file.get_mut(at..at.checked_add(PLACEHOLDER.len())?)?;
            if field != PLACEHOLDER.as_bytes() {
                return None;
            }
            field.copy_from_slice(&stamp);
        }
        Some(file)
    }

    /// Where the install times are, if the manifest names exactly the
    /// migrations `migrator` would apply to an empty file, in order.
    fn install_times_if_holding(&self, migrator: &Migrator) -> Option<Vec<usize>> {
        if !batch::applies(migrator) {
            return None;
        }
        let mut expected = batch::ups(migrator).map(migration_line);
        let mut places = Vec::new();
        for line in self.manifest.lines() {
            if let Some(at) = line.strip_prefix("installed_on ") {
                places.push(at.parse().ok()?);
            } else if line.starts_with("migration ") && expected.next().as_deref() != Some(line) {
                return None;
            }
        }
        expected.next().is_none().then_some(places)
    }
}

/// How the manifest names a migration.
fn migration_line(migration: &sqlx::migrate::Migration) -> String {
    format!(
        "migration {} {}",
        migration.version,
        batch::hex(&migration.checksum)
    )
}

/// Makes the image of a new file holding `migrator`'s migrations: the file's
/// bytes and its manifest. Made in a scratch file in `dir`, removed after.
/// The same migrations and SQLite version make the same bytes, so a store's
/// test can compare its image with a fresh one.
pub async fn make(dir: &Path, migrator: &Migrator) -> Result<(Vec<u8>, String), OpenError> {
    let scratch = create::scratch_path(&dir.join("image.db"));
    let made = async {
        if !batch::applies(migrator) {
            return Err(OpenError::Create {
                path: scratch.clone(),
                source: std::io::Error::other(
                    "an image needs migrations that all run in one transaction",
                ),
            });
        }
        create::build(&scratch, migrator, batch::Stamp::Placeholder).await?;
        std::fs::read(&scratch).map_err(|source| OpenError::Create {
            path: scratch.clone(),
            source,
        })
    }
    .await;
    create::remove_scratch(&scratch);
    let file = made?;
    let mut manifest = String::from(
        "# The migrations this new database holds, and where their install times are.\n",
    );
    for migration in batch::ups(migrator) {
        manifest.push_str(&migration_line(migration));
        manifest.push('\n');
    }
    let places: Vec<usize> = file
        .windows(PLACEHOLDER.len())
        .enumerate()
        .filter(|(_, w)| *w == PLACEHOLDER.as_bytes())
        .map(|(at, _)| at)
        .collect();
    if places.len() != batch::ups(migrator).count() {
        return Err(OpenError::Create {
            path: scratch,
            source: std::io::Error::other(format!(
                "found {} install times in the image, not one per migration",
                places.len()
            )),
        });
    }
    for at in places {
        let _ = writeln!(manifest, "installed_on {at}");
    }
    Ok((file, manifest))
}

/// `now` as SQLite's `CURRENT_TIMESTAMP` writes it: `YYYY-MM-DD HH:MM:SS`, UTC.
fn utc_timestamp(now: SystemTime) -> [u8; PLACEHOLDER.len()] {
    let text = chrono::DateTime::<chrono::Utc>::from(now)
        .format("%Y-%m-%d %H:%M:%S")
        .to_string();
    let mut stamp = [0; PLACEHOLDER.len()];
    // Years past 9999 would not fit: the placeholder's width is kept.
    match text.len() == stamp.len() {
        true => stamp.copy_from_slice(text.as_bytes()),
        false => stamp.copy_from_slice(PLACEHOLDER.as_bytes()),
    }
    stamp
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_read_as_sqlite_writes_them() {
        let at = |secs| utc_timestamp(SystemTime::UNIX_EPOCH + Duration::from_secs(secs));
        assert_eq!(&at(0), b"1970-01-01 00:00:00");
        // A leap day, the day after, and a century that is not a leap year.
        assert_eq!(&at(951_782_400), b"2000-02-29 00:00:00");
        assert_eq!(&at(951_868_799), b"2000-02-29 23:59:59");
        assert_eq!(&at(4_107_542_400), b"2100-03-01 00:00:00");
        assert_eq!(&at(1_795_827_661), b"2026-11-28 01:01:01");
    }
}
