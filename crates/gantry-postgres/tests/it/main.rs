//! Opening a database as the stores do: created when missing, migrated, and
//! errors that name the database without its password.

use gantry_testkit::postgres::TestDatabase;
use sqlx::migrate::Migrator;

/// The tests' schema: one table (`migrations/`).
static MIGRATOR: Migrator = sqlx::migrate!("tests/it/migrations");

#[tokio::test]
async fn creates_a_missing_database_with_the_schema_applied_and_reopens_it() {
    let Some(db) = TestDatabase::create_later().await else {
        return;
    };
    let pool = gantry_postgres::open(&db.url(), &MIGRATOR).await.unwrap();
    sqlx::query("INSERT INTO notes (id, body) VALUES (1, 'kept')")
        .execute(&pool)
        .await
        .unwrap();
    let commit_mode: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(commit_mode, "off");
    pool.close().await;

    let pool = gantry_postgres::open(&db.url(), &MIGRATOR).await.unwrap();
    let body: String = sqlx::query_scalar("SELECT body FROM notes WHERE id = 1")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(body, "kept");
    pool.close().await;
}

#[tokio::test]
async fn a_bad_url_is_named_without_its_password() {
    let error = gantry_postgres::open("postgres://gantry:s3cret@db:not-a-port/gantry", &MIGRATOR)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("postgres://gantry@db:not-a-port/gantry"),
        "{error}"
    );
    assert!(!error.contains("s3cret"), "{error}");
}
