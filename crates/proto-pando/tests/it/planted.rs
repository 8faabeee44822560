//! What the model's commands (which write in the workspace) or another
//! local user (who writes in the registry) may plant where a starting
//! instance keeps its files: links are refused or replaced, never
//! followed; a FIFO is never waited on; nothing outside is touched.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::Duration;

use proto_pando::{DiscoveryError, InstanceOptions, PandoInstance};
use tokio_util::sync::CancellationToken;

use crate::common::{HANG_GUARD, engine};

/// A workspace, a registry and a directory outside both, in one temp dir
/// (one file system: hard links work between them).
struct Dirs {
    ws: PathBuf,
    registry: PathBuf,
    outside: PathBuf,
    _tmp: tempfile::TempDir,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().expect("tempdir");
    let [ws, registry, outside] = ["ws", "registry", "outside"].map(|n| tmp.path().join(n));
    for d in [&ws, &registry, &outside] {
        std::fs::create_dir(d).expect("mkdir");
    }
    Dirs {
        ws,
        registry,
        outside,
        _tmp: tmp,
    }
}

/// A real start on `ws`, registering in `registry`, bounded by HANG_GUARD.
async fn try_start(
    ws: &Path,
    registry: &Path,
    stop: &CancellationToken,
) -> Result<PandoInstance, DiscoveryError> {
    let (engine, _llm) = engine(vec![]).await;
    let options = InstanceOptions {
        registry_dir: registry.to_path_buf(),
        heartbeat: Duration::from_millis(100),
        ..InstanceOptions::new(ws)
    };
    tokio::time::timeout(
        HANG_GUARD,
        PandoInstance::start(engine, options, stop.clone()),
    )
    .await
    .expect("start in time")
}

/// A file's content and permission bits.
fn snapshot(path: &Path) -> (String, u32) {
    let meta = std::fs::metadata(path).expect("stat");
    let text = std::fs::read_to_string(path).expect("read");
    (text, meta.mode() & 0o7777)
}

/// An outside file a planted link points at: content and a mode the
/// daemon would change (it sets 0600).
fn precious(dirs: &Dirs) -> PathBuf {
    let target = dirs.outside.join("precious");
    std::fs::write(&target, "precious\n").expect("write");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    target
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_file_symlinked_out_of_the_workspace_is_refused_and_its_target_untouched() {
    let d = dirs();
    let target = precious(&d);
    std::fs::create_dir(d.ws.join(".pando")).expect("mkdir");
    symlink(&target, d.ws.join(".pando/ipc.lock")).expect("symlink");
    let before = snapshot(&target);
    let stop = CancellationToken::new();
    let result = try_start(&d.ws, &d.registry, &stop).await;
    stop.cancel();
    let e = result
        .err()
        .expect("a lock file that is a symlink is refused");
    let said = e.to_string();
    // DiscoveryError::Refused, said so.
    assert!(said.starts_with("refusing "), "{said}");
    assert!(
        said.contains("ipc.lock") && said.contains("symbolic link"),
        "{said}"
    );
    assert_eq!(snapshot(&target), before);
    // The link is left for the user to see, and nothing was registered.
    assert!(
        std::fs::symlink_metadata(d.ws.join(".pando/ipc.lock"))
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_dir(&d.registry).expect("ls").count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_file_hard_linked_to_an_outside_file_is_refused_and_its_target_untouched() {
    let d = dirs();
    let target = precious(&d);
    std::fs::create_dir(d.ws.join(".pando")).expect("mkdir");
    std::fs::hard_link(&target, d.ws.join(".pando/ipc.lock")).expect("link");
    let before = snapshot(&target);
    let stop = CancellationToken::new();
    let result = try_start(&d.ws, &d.registry, &stop).await;
    stop.cancel();
    let said = result
        .err()
        .expect("a hard-linked lock file is refused")
        .to_string();
    assert!(
        said.contains("ipc.lock") && said.contains("hard link"),
        "{said}"
    );
    assert_eq!(snapshot(&target), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pando_dir_symlinked_out_of_the_workspace_is_refused_and_nothing_is_made_there() {
    let d = dirs();
    let target = d.outside.join("elsewhere");
    std::fs::create_dir(&target).expect("mkdir");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    symlink(&target, d.ws.join(".pando")).expect("symlink");
    let stop = CancellationToken::new();
    let result = try_start(&d.ws, &d.registry, &stop).await;
    stop.cancel();
    let e = result.err().expect("a .pando that is a symlink is refused");
    let said = e.to_string();
    // DiscoveryError::Refused, said so.
    assert!(said.starts_with("refusing "), "{said}");
    assert!(
        said.contains(".pando") && said.contains("symbolic link"),
        "{said}"
    );
    let made: Vec<_> = std::fs::read_dir(&target).expect("ls").collect();
    assert!(made.is_empty(), "{made:?}");
    let mode = std::fs::metadata(&target).expect("stat").mode() & 0o7777;
    assert_eq!(mode, 0o755);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_in_the_registry_neither_hangs_start_nor_stops_it() {
    let d = dirs();
    let fifo = d.registry.join("something.json");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
    // A link to an entry elsewhere is not read either.
    std::fs::write(d.outside.join("entry.json"), "{}").expect("write");
    symlink(d.outside.join("entry.json"), d.registry.join("linked.json")).expect("symlink");
    let stop = CancellationToken::new();
    let (ws, registry) = (d.ws.clone(), d.registry.clone());
    let started = tokio::spawn({
        let stop = stop.clone();
        async move {
            let (engine, llm) = engine(vec![]).await;
            let options = InstanceOptions {
                registry_dir: registry,
                ..InstanceOptions::new(ws)
            };
            (PandoInstance::start(engine, options, stop).await, llm)
        }
    });
    let (result, _llm) = match tokio::time::timeout(Duration::from_secs(20), started).await {
        Ok(joined) => joined.expect("the start task"),
        Err(_) => {
            // Unblock the reader stuck on the FIFO (so the runtime can
            // shut down), then fail.
            let f = fifo.clone();
            std::thread::spawn(move || drop(std::fs::OpenOptions::new().write(true).open(f)));
            panic!("the start hung on a FIFO in the registry");
        }
    };
    let instance = result.expect("the start succeeds beside a FIFO");
    let entry = d
        .registry
        .join(format!("{}.json", instance.entry().lock.instance_id));
    assert!(std::fs::metadata(&entry).expect("entry").is_file());
    assert!(
        std::fs::symlink_metadata(&fifo)
            .expect("lstat")
            .file_type()
            .is_fifo()
    );
    assert_eq!(
        std::fs::read_to_string(d.outside.join("entry.json")).expect("read"),
        "{}"
    );
    stop.cancel();
    tokio::time::timeout(HANG_GUARD, instance.stopped())
        .await
        .expect("stopped in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_swapped_for_links_while_serving_are_removed_without_following_them() {
    let d = dirs();
    let stop = CancellationToken::new();
    let instance = try_start(&d.ws, &d.registry, &stop)
        .await
        .expect("instance");
    let name = format!("{}.json", instance.entry().lock.instance_id);

    // The instance's own entry becomes a link to an outside file.
    let target = precious(&d);
    let before = snapshot(&target);
    std::fs::remove_file(d.registry.join(&name)).expect("rm");
    symlink(&target, d.registry.join(&name)).expect("symlink");

    // The registry dir and `.pando` become links to outside directories
    // holding files of the same names.
    let fake_registry = d.outside.join("registry");
    let fake_pando = d.outside.join("pando");
    for (real, fake, file) in [
        (&d.registry, &fake_registry, name.as_str()),
        (&d.ws.join(".pando"), &fake_pando, "ipc.lock"),
    ] {
        std::fs::create_dir(fake).expect("mkdir");
        std::fs::write(fake.join(file), "outside\n").expect("write");
        let moved = real.with_extension("moved");
        std::fs::rename(real, &moved).expect("rename");
        symlink(fake, real).expect("symlink");
    }

    stop.cancel();
    tokio::time::timeout(HANG_GUARD, instance.stopped())
        .await
        .expect("stopped in time");
    assert_eq!(snapshot(&target), before);
    for path in [fake_registry.join(&name), fake_pando.join("ipc.lock")] {
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some("outside\n"),
            "{} was removed or changed",
            path.display()
        );
    }
    // What it did remove is its own, where it made it.
    assert!(!d.ws.join(".pando.moved/ipc.lock").exists());
    assert!(!d.registry.with_extension("moved").join(&name).exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_dir_that_is_a_symlink_is_refused_and_its_target_untouched() {
    let d = dirs();
    std::fs::remove_dir(&d.registry).expect("rmdir");
    symlink(&d.outside, &d.registry).expect("symlink");
    let stop = CancellationToken::new();
    let result = try_start(&d.ws, &d.registry, &stop).await;
    stop.cancel();
    let said = result
        .err()
        .expect("a linked registry is refused")
        .to_string();
    assert!(
        said.contains("registry") && said.contains("symbolic link"),
        "{said}"
    );
    assert_eq!(std::fs::read_dir(&d.outside).expect("ls").count(), 0);
}
