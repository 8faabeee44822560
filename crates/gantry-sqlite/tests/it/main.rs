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
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
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
