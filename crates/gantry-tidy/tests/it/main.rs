//! The workspace's architecture tests, in the style of rust-analyzer's
//! `tidy.rs`: the rules ARCHITECTURE.md states, checked on the files of the
//! tree (manifests, sources, the code map) without running cargo.
//!
//! `deps.rs` is the table of what each crate may depend on, `file_size.rs`
//! the size limits, `code_map.rs` the code map against `crates/`.
//! `test_binaries.rs` one test binary per crate. `docs.rs` README and the
//! book: links, anchors, the book's table of contents, code blocks.
//! `fixtures.rs` shows each rule fail on a small made-up workspace;
//! `workspace.rs` runs them all on this one.

mod code_map;
mod deps;
mod docs;
mod file_size;
mod fixtures;
mod manifest;
mod test_binaries;
mod workspace;
