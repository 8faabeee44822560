//! Opening a database as the stores do: created where asked, WAL, migrated,
//! and errors that name the file.

use sqlx::migrate::Migrator;

/// A migrator for one table, read from a migrations folder in `dir`.
async fn migrator(dir: &std::path::Path) -> Migrator {
    let migrations = dir.join("migrations");
    std::fs::create_dir_all(&migrations).unwrap();
    std::fs::write(
        migrations.join("0001_notes.sql"),
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);",
    )
    .unwrap();
    Migrator::new(migrations.as_path()).await.unwrap()
}

#[tokio::test]
async fn opens_a_new_file_in_missing_directories_in_wal_mode_with_the_schema_applied() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/store.db");
    let pool = gantry_sqlite::open(&path, &migrator(dir.path()).await)
        .await
        .unwrap();
    assert!(path.is_file());
    assert_eq!(journal_mode(&pool).await, "wal");
    sqlx::query("INSERT INTO notes (body) VALUES ('kept')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    // Opened again, the migration is not re-run and the data is there.
    let pool = gantry_sqlite::open(&path, &migrator(dir.path()).await)
        .await
        .unwrap();
    let body: String = sqlx::query_scalar("SELECT body FROM notes")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(body, "kept");
}

#[tokio::test]
async fn a_directory_that_cannot_be_made_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let path = blocker.join("store.db");
    let error = gantry_sqlite::open(&path, &migrator(dir.path()).await)
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("create ") && message.contains(&blocker.display().to_string()),
        "{message}"
    );
}

/// The files in `dir` other than the migrations folder.
fn files_beside(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "migrations")
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_new_file_whose_creation_fails_midway_is_not_left_behind_and_is_made_whole_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let migrations = dir.path().join("migrations");
    migrator(dir.path()).await;
    // The second migration fails after the first is applied: as if the
    // process died between them.
    let second = migrations.join("0002_tags.sql");
    std::fs::write(&second, "CREATE TABLE tags (oops").unwrap();
    let broken = Migrator::new(migrations.as_path()).await.unwrap();
    let error = gantry_sqlite::open(&path, &broken).await.unwrap_err();
    assert!(error.to_string().starts_with("migrate "), "{error}");
    assert_eq!(files_beside(dir.path()), Vec::<String>::new());

    std::fs::write(&second, "CREATE TABLE tags (name TEXT NOT NULL);").unwrap();
    let fixed = Migrator::new(migrations.as_path()).await.unwrap();
    let pool = gantry_sqlite::open(&path, &fixed).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('notes', 'tags') ORDER BY name",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(tables, ["notes", "tags"]);
    assert_eq!(journal_mode(&pool).await, "wal");
}

#[tokio::test]
async fn a_half_made_file_left_by_a_crash_is_never_taken_for_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    // What a process killed while making the database leaves: its scratch
    // file, under another name.
    let leftover = dir.path().join("store.db.new-1-2");
    std::fs::write(&leftover, "half a database").unwrap();
    let pool = gantry_sqlite::open(&path, &migrator(dir.path()).await)
        .await
        .unwrap();
    sqlx::query("INSERT INTO notes (body) VALUES ('x')")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    assert_eq!(
        std::fs::read_to_string(&leftover).unwrap(),
        "half a database"
    );
    assert_eq!(files_beside(dir.path()), ["store.db", "store.db.new-1-2"]);
}

/// Migrations written the ways a migration file can be: several files, a
/// quote in a description, a last statement with no semicolon, a file ending
/// in a comment, an `ALTER TABLE`, rows inserted and updated.
async fn varied_migrator(dir: &std::path::Path) -> Migrator {
    let migrations = dir.join("migrations");
    std::fs::create_dir_all(&migrations).unwrap();
    let files = [
        (
            "0001_notes.sql",
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);\n\
             CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ),
        (
            "0002_it's_tags.sql",
            "CREATE TABLE tags (name TEXT NOT NULL); -- the last word",
        ),
        (
            "0003_rank.sql",
            "ALTER TABLE notes ADD COLUMN rank INTEGER;\n\
             CREATE INDEX notes_rank ON notes (rank);\n\
             INSERT INTO settings (key, value) VALUES ('format', '1');\n\
             UPDATE settings SET value = '2' WHERE key = 'format';\n",
        ),
    ];
    for (name, sql) in files {
        std::fs::write(migrations.join(name), sql).unwrap();
    }
    Migrator::new(migrations.as_path()).await.unwrap()
}

/// What a database holds that migrating decides: its schema's text, the
/// migrations recorded (all but the timing columns), and the rows migrations wrote.
#[derive(Debug, PartialEq)]
struct Migrated {
    schema: Vec<(String, String, Option<String>)>,
    recorded: Vec<(i64, String, bool, Vec<u8>)>,
    settings: Vec<(String, String)>,
}

async fn migrated(conn: &mut sqlx::SqliteConnection) -> Migrated {
    Migrated {
        schema: sqlx::query_as("SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
            .fetch_all(&mut *conn)
            .await
            .unwrap(),
        recorded: sqlx::query_as(
            "SELECT version, description, success, checksum FROM _sqlx_migrations ORDER BY version",
        )
        .fetch_all(&mut *conn)
        .await
        .unwrap(),
        settings: sqlx::query_as("SELECT key, value FROM settings ORDER BY key")
            .fetch_all(&mut *conn)
            .await
            .unwrap(),
    }
}

async fn connect(path: &std::path::Path) -> sqlx::SqliteConnection {
    use sqlx::ConnectOptions;
    sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .connect()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_new_file_holds_what_the_migrator_makes_and_the_migrator_then_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let migrator = varied_migrator(dir.path()).await;

    // The reference: sqlx's migrator on an empty file.
    let reference_path = dir.path().join("reference.db");
    let mut reference = connect(&reference_path).await;
    migrator.run(&mut reference).await.unwrap();
    let expected = migrated(&mut reference).await;
    assert_eq!(expected.recorded.len(), 3);
    assert_eq!(expected.recorded[1].1, "it's tags");

    let path = dir.path().join("store.db");
    open_and_close(&path, &migrator).await;
    let mut made = connect(&path).await;
    assert_eq!(migrated(&mut made).await, expected);
    let timings: Vec<i64> = sqlx::query_scalar("SELECT execution_time FROM _sqlx_migrations")
        .fetch_all(&mut made)
        .await
        .unwrap();
    assert!(timings.iter().all(|t| *t >= 0), "{timings:?}");

    // The migrator finds everything applied: no schema change, no new row.
    let before = schema_and_records(&mut made).await;
    migrator.run(&mut made).await.unwrap();
    let after = schema_and_records(&mut made).await;
    assert_eq!(after, before);
    assert_eq!(migrated(&mut made).await, expected);
}

/// Opens (so makes) the database at `path` the way every store does, then
/// closes it.
async fn open_and_close(path: &std::path::Path, migrator: &Migrator) {
    gantry_sqlite::open(path, migrator)
        .await
        .unwrap()
        .close()
        .await;
}

/// The schema's version and what `_sqlx_migrations` says of each migration,
/// timing included: what a migrator run that applies nothing leaves as is.
async fn schema_and_records(conn: &mut sqlx::SqliteConnection) -> (i64, Vec<(i64, String, i64)>) {
    let version = sqlx::query_scalar("PRAGMA schema_version")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let records = sqlx::query_as(
        "SELECT version, installed_on, execution_time FROM _sqlx_migrations ORDER BY version",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    (version, records)
}

/// The journal mode the database on `pool` is in.
async fn journal_mode(pool: &sqlx::SqlitePool) -> String {
    sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Writes the migration `name` into `dir`'s migrations folder and reads
/// the folder's migrator.
async fn with_migration(dir: &std::path::Path, name: &str, sql: &str) -> Migrator {
    std::fs::write(dir.join("migrations").join(name), sql).unwrap();
    Migrator::new(dir.join("migrations").as_path())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_migration_that_runs_outside_a_transaction_is_made_by_the_migrator_itself() {
    let dir = tempfile::tempdir().unwrap();
    varied_migrator(dir.path()).await;
    let migrator =
        with_migration(dir.path(), "0004_vacuum.sql", "-- no-transaction\nVACUUM;").await;
    assert!(migrator.iter().any(|m| m.no_tx));

    let mut reference = connect(&dir.path().join("reference.db")).await;
    migrator.run(&mut reference).await.unwrap();
    let expected = migrated(&mut reference).await;
    assert_eq!(expected.recorded.len(), 4);

    let path = dir.path().join("store.db");
    open_and_close(&path, &migrator).await;
    assert_eq!(migrated(&mut connect(&path).await).await, expected);
}

/// `migrator`'s image, made in `dir`, as a store embeds one.
async fn image_of(dir: &std::path::Path, migrator: &Migrator) -> gantry_sqlite::Image {
    let (file, manifest) = gantry_sqlite::image::make(dir, migrator).await.unwrap();
    gantry_sqlite::Image::new(file.leak(), manifest.leak())
}

#[tokio::test]
async fn a_new_file_written_from_the_image_is_the_one_the_migrator_makes() {
    let dir = tempfile::tempdir().unwrap();
    let migrator = varied_migrator(dir.path()).await;
    let image = image_of(dir.path(), &migrator).await;
    // Making an image leaves nothing behind.
    assert_eq!(files_beside(dir.path()), Vec::<String>::new());

    let mut reference = connect(&dir.path().join("reference.db")).await;
    migrator.run(&mut reference).await.unwrap();
    let expected = migrated(&mut reference).await;

    let path = dir.path().join("store.db");
    let before = sqlite_now(&mut reference).await;
    let pool = gantry_sqlite::open_with_image(&path, &migrator, Some(&image))
        .await
        .unwrap();
    assert_eq!(journal_mode(&pool).await, "wal");
    pool.close().await;
    // The file's permissions are those SQLite gives the files it creates.
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
    };
    assert_eq!(mode(&path), mode(&dir.path().join("reference.db")));
    let mut made = connect(&path).await;
    assert_eq!(migrated(&mut made).await, expected);
    let check: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&mut made)
        .await
        .unwrap();
    assert_eq!(check, "ok");
    // Each migration's install time is when the file was made, as SQLite
    // itself writes times; no time spent running it (so the file was
    // written, not migrated: batches record their time).
    let installed: Vec<(String, i64)> =
        sqlx::query_as("SELECT installed_on, execution_time FROM _sqlx_migrations")
            .fetch_all(&mut made)
            .await
            .unwrap();
    let after = sqlite_now(&mut made).await;
    assert_eq!(installed.len(), 3);
    for (at, took) in &installed {
        assert_eq!(*took, 0);
        assert!(
            before <= *at && *at <= after,
            "{at} not in {before}..{after}"
        );
    }

    // The migrator finds everything applied.
    let before = schema_and_records(&mut made).await;
    migrator.run(&mut made).await.unwrap();
    assert_eq!(schema_and_records(&mut made).await, before);
}

/// SQLite's own `CURRENT_TIMESTAMP`.
async fn sqlite_now(conn: &mut sqlx::SqliteConnection) -> String {
    sqlx::query_scalar("SELECT CURRENT_TIMESTAMP")
        .fetch_one(conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_image_of_other_migrations_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    // The image holds the first migration only; the store has since gained
    // a second.
    let image = image_of(dir.path(), &migrator(dir.path()).await).await;
    let grown = with_migration(
        dir.path(),
        "0002_tags.sql",
        "CREATE TABLE tags (name TEXT NOT NULL);",
    )
    .await;
    let path = dir.path().join("store.db");
    let pool = gantry_sqlite::open_with_image(&path, &grown, Some(&image))
        .await
        .unwrap();
    sqlx::query("INSERT INTO tags (name) VALUES ('kept')")
        .execute(&pool)
        .await
        .unwrap();
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(applied, [1, 2]);

    // Nor is one whose migration changed since (same version, other SQL).
    pool.close().await;
    std::fs::remove_file(&path).unwrap();
    let changed = with_migration(
        dir.path(),
        "0001_notes.sql",
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, rank INTEGER);",
    )
    .await;
    let same_versions = image_of(dir.path(), &grown).await;
    let pool = gantry_sqlite::open_with_image(&path, &changed, Some(&same_versions))
        .await
        .unwrap();
    sqlx::query("INSERT INTO notes (body, rank) VALUES ('x', 1)")
        .execute(&pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn images_of_the_same_migrations_are_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let migrator = varied_migrator(dir.path()).await;
    let first = gantry_sqlite::image::make(dir.path(), &migrator)
        .await
        .unwrap();
    let second = gantry_sqlite::image::make(dir.path(), &migrator)
        .await
        .unwrap();
    assert!(first == second, "two images of one migrator differ");
    assert_eq!(
        first
            .1
            .lines()
            .filter(|l| l.starts_with("migration "))
            .count(),
        3
    );
}
