//! Link flags for the `gantry` binary.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // Relative relocations packed as a bitmap (DT_RELR, GNU ld 2.38+, glibc
    // 2.36+): the dynamic linker reads ~70 000 of them at every start; packed,
    // they take a few KiB instead of 1.6 MiB and apply faster. Opt out with
    // GANTRY_NO_RELR=1 to build for an older glibc.
    println!("cargo:rerun-if-env-changed=GANTRY_NO_RELR");
    if os == "linux" && env == "gnu" && std::env::var_os("GANTRY_NO_RELR").is_none() {
        println!("cargo:rustc-link-arg-bin=gantry=-Wl,-z,pack-relative-relocs");
    }
}
