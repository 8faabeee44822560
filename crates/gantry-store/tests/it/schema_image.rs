//! The schema image new SQLite stores are written from (`schema-image/`)
//! is what the migrations make today.

use std::path::Path;

use gantry_store::sqlite::MIGRATOR;

#[tokio::test]
async fn schema_image_is_the_one_the_migrations_make() {
    let scratch = tempfile::tempdir().unwrap();
    let (file, manifest) = gantry_sqlite::image::make(scratch.path(), &MIGRATOR)
        .await
        .unwrap();
    // Where the build embeds the image and its manifest from.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema-image");
    if std::env::var_os("GANTRY_BLESS").is_some() {
        std::fs::write(dir.join("gantry.db"), &file).unwrap();
        std::fs::write(dir.join("gantry.db.manifest"), &manifest).unwrap();
        return;
    }
    let shipped_file = std::fs::read(dir.join("gantry.db")).unwrap();
    let shipped_manifest = std::fs::read_to_string(dir.join("gantry.db.manifest")).unwrap();
    // A stale image is never used (its manifest names other migrations), so
    // nothing breaks meanwhile: new stores are only slower to make.
    assert!(
        shipped_manifest == manifest && shipped_file == file,
        "schema-image/ is stale (a migration or SQLite changed): remake it with \
         `GANTRY_BLESS=1 cargo test -p gantry-store --test it schema_image`"
    );
}
