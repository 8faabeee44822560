//! Links the `gantry` binary's hot code together (release builds only).
//!
//! `link/hot-text.txt` lists, in mangled form, the functions one `gantry
//! exec` turn runs. Handed to the linker as a symbol ordering file, they
//! end up side by side at the start of `.text`, so a turn maps ≈ 3 MiB of
//! code instead of scattered 64 KiB windows (the kernel maps a file's
//! pages around each one touched) over 16 MiB of it: peak RSS drops by
//! about a third. The list only orders code: a stale one (another
//! toolchain, updated dependencies) costs memory, never correctness.
//! `link/make-hot-text.py` remakes it.

use std::path::Path;

fn main() {
    let list = Path::new("link/hot-text.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=GANTRY_NO_HOT_TEXT");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    // rust-lld is the default linker of this target only; other linkers
    // (GNU ld) would not know the option. A custom linker (`RUSTC_LINKER`:
    // cargo's config or env; or one given in the flags) opts out.
    let lld_target = var("TARGET") == "x86_64-unknown-linux-gnu"
        && std::env::var_os("RUSTC_LINKER").is_none()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("linker");
    // Debug and test builds have other symbols: the list would not match.
    let release = var("PROFILE") == "release";
    if !lld_target || !release || std::env::var_os("GANTRY_NO_HOT_TEXT").is_some() {
        return;
    }
    let Ok(path) = list.canonicalize() else {
        return;
    };
    println!(
        "cargo:rustc-link-arg-bin=gantry=-Wl,--symbol-ordering-file={}",
        path.display()
    );
    // Names the list has but this build lacks are expected, not news.
    println!("cargo:rustc-link-arg-bin=gantry=-Wl,--no-warn-symbol-ordering");
}
