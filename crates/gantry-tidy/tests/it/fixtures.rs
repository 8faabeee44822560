//! Each rule fails on a small made-up workspace that breaks it, with the
//! message a reader acts on.

use crate::code_map;
use crate::deps::{self, glob};
use crate::docs::{self, Page};
use crate::file_size::{self, SourceFile};
use crate::manifest::{self, Kind, Manifest};

/// The fixtures' root manifest: a workspace dependency that renames.
const ROOT: &str = r#"
[workspace]
members = ["crates/*"]

[workspace.dependencies]
gantry-types = { path = "crates/gantry-types" }
rpc = { package = "tonic", version = "0.14" }
"#;

fn manifest(name: &str, rest: &str) -> Manifest {
    let workspace = manifest::workspace_dependencies(ROOT).expect("fixture root");
    let text = format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n\n{rest}");
    manifest::parse(&text, &workspace).expect("fixture manifest")
}

/// A crate with nothing but the given `[dependencies]`.
fn depending_on(name: &str, deps: &[&str]) -> Manifest {
    let lines: Vec<String> = deps.iter().map(|d| format!("{d} = \"1\"")).collect();
    manifest(name, &format!("[dependencies]\n{}\n", lines.join("\n")))
}

fn check(manifests: &[Manifest]) -> Vec<String> {
    deps::check(manifests, &[])
}

// Reading manifests.

#[test]
fn a_manifest_names_what_each_dependency_really_is() {
    let m = manifest(
        "gantry-x",
        r#"
[dependencies]
gantry-types.workspace = true
grpc = { package = "tonic", version = "0.14" }
rpc = { workspace = true, features = ["codegen"] }

[build-dependencies]
prost-build = "0.14"

[dev-dependencies]
tokio = "1"

[target.'cfg(unix)'.dependencies]
libc = "0.2"
"#,
    );
    let found: Vec<(&str, Kind, &str)> = m
        .dependencies
        .iter()
        .map(|d| (d.name.as_str(), d.kind, d.section.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("gantry-types", Kind::Normal, "[dependencies]"),
            ("tonic", Kind::Normal, "[dependencies]"),
            ("tonic", Kind::Normal, "[dependencies]"),
            ("prost-build", Kind::Build, "[build-dependencies]"),
            ("tokio", Kind::Dev, "[dev-dependencies]"),
            ("libc", Kind::Normal, "[target.'cfg(unix)'.dependencies]"),
        ]
    );
}

#[test]
fn patterns_match_names() {
    assert!(glob("proto-*", "proto-code-agent"));
    assert!(glob("proto-*", "proto-"));
    assert!(!glob("proto-*", "gantry-proto"));
    assert!(glob("*", "anything"));
    assert!(glob("tonic", "tonic"));
    assert!(!glob("tonic", "tonic-health"));
    assert!(glob("a*c*e", "abcde"));
}

#[test]
fn a_workspace_that_follows_the_rules_passes() {
    let manifests = [
        depending_on("gantry-types", &["serde"]),
        depending_on("gantry-core", &["gantry-types", "tokio"]),
        depending_on(
            "proto-a",
            &[
                "gantry-core",
                "gantry-grpc",
                "gantry-runner-protocol",
                "tonic",
            ],
        ),
        // An HTTP and stdio adapter: axum, the engine, its types.
        depending_on("proto-codewhale", &["gantry-core", "gantry-types", "axum"]),
        depending_on("gantry-runner-protocol", &["gantry-grpc", "tonic", "prost"]),
        depending_on(
            "gantry-control-plane",
            &["gantry-runner-protocol", "gantry-grpc", "axum", "sqlx"],
        ),
        manifest(
            "gantry-cli",
            "[dev-dependencies]\ngantry-testkit = \"0.1\"\n",
        ),
    ];
    assert_eq!(check(&manifests), Vec::<String>::new());
}

// Rule 1: the engine knows no wire format.

#[test]
fn the_engine_may_not_depend_on_an_adapter() {
    let manifests = [depending_on("gantry-core", &["proto-code-agent"])];
    assert_eq!(
        check(&manifests),
        [
            "gantry-core depends on proto-code-agent: the engine knows no wire format \
          (ARCHITECTURE.md, Invariants)"
        ]
    );
}

#[test]
fn nor_may_any_crate_under_it_speak_a_wire_format() {
    let manifests = [
        depending_on("gantry-llm", &["axum"]),
        depending_on("gantry-store", &["gantry-grpc"]),
        depending_on("gantry-tools", &["gantry-cli"]),
        manifest(
            "gantry-types",
            "[build-dependencies]\nprost-build = \"0.14\"\n",
        ),
        // A rename does not hide it.
        manifest("gantry-policy", "[dependencies]\nrpc.workspace = true\n"),
    ];
    let why = "the engine knows no wire format (ARCHITECTURE.md, Invariants)";
    assert_eq!(
        check(&manifests),
        [
            format!("gantry-llm depends on axum: {why}"),
            format!("gantry-store depends on gantry-grpc: {why}"),
            format!("gantry-tools depends on gantry-cli: {why}"),
            format!("gantry-types depends on prost-build (in [build-dependencies]): {why}"),
            format!("gantry-policy depends on tonic: {why}"),
        ]
    );
}

#[test]
fn a_crate_the_engine_starts_to_use_must_join_its_rules() {
    let manifests = [
        depending_on("gantry-core", &["gantry-types", "gantry-memory"]),
        depending_on("gantry-types", &[]),
        depending_on("gantry-memory", &[]),
    ];
    assert_eq!(
        check(&manifests),
        [
            "gantry-core depends on gantry-memory: the engine's rules bind every crate it \
          builds; add gantry-memory to ENGINE in crates/gantry-tidy/tests/it/deps.rs"
        ]
    );
}

// Rule 2: adapters stand alone and go through the engine.

#[test]
fn an_adapter_may_not_depend_on_another() {
    let manifests = [depending_on("proto-a", &["gantry-core", "proto-b"])];
    assert_eq!(
        check(&manifests),
        [
            "proto-a depends on proto-b: an adapter never uses another adapter; share code \
          through gantry-core or gantry-grpc (ARCHITECTURE.md, Invariants)"
        ]
    );
}

#[test]
fn the_codewhale_adapter_is_an_adapter() {
    let manifests = [depending_on(
        "proto-codewhale",
        &["gantry-core", "gantry-store", "proto-code-agent"],
    )];
    assert_eq!(
        check(&manifests),
        [
            "proto-codewhale depends on proto-code-agent: an adapter never uses another \
          adapter; share code through gantry-core or gantry-grpc (ARCHITECTURE.md, Invariants)",
            "proto-codewhale depends on gantry-store: adapters go through the engine; use what \
          gantry-core exports (ARCHITECTURE.md, Invariants)",
        ]
    );
}

#[test]
fn an_adapter_may_not_reach_the_store() {
    let manifests = [depending_on("proto-a", &["gantry-store"])];
    assert_eq!(
        check(&manifests),
        [
            "proto-a depends on gantry-store: adapters go through the engine; use what \
          gantry-core exports (ARCHITECTURE.md, Invariants)"
        ]
    );
}

// Rule 3: the control plane keeps no engine, and the protocol it shares
// with the runner pulls in neither side.

#[test]
fn the_control_plane_may_not_depend_on_the_engine() {
    let manifests = [depending_on(
        "gantry-control-plane",
        &["gantry-runner-protocol", "gantry-core"],
    )];
    assert_eq!(
        check(&manifests),
        [
            "gantry-control-plane depends on gantry-core: the control plane keeps no engine; \
          runners dial it over gRPC (ARCHITECTURE.md, Bird's-eye view)"
        ]
    );
}

#[test]
fn the_control_plane_keeps_its_own_store() {
    let manifests = [depending_on("gantry-control-plane", &["gantry-store"])];
    assert_eq!(
        check(&manifests),
        [
            "gantry-control-plane depends on gantry-store: the control plane keeps its own \
          store (its src/store/); gantry-store is the engine's (ARCHITECTURE.md, \
          crates/gantry-control-plane)"
        ]
    );
}

#[test]
fn the_runner_protocol_pulls_in_neither_side() {
    let manifests = [depending_on(
        "gantry-runner-protocol",
        &[
            "gantry-grpc",
            "gantry-control-plane",
            "proto-runner-control",
        ],
    )];
    let why = "the runner protocol is shared by the runner and the control plane, so it \
               pulls in neither (ARCHITECTURE.md, crates/gantry-runner-protocol)";
    assert_eq!(
        check(&manifests),
        [
            format!("gantry-runner-protocol depends on gantry-control-plane: {why}"),
            format!("gantry-runner-protocol depends on proto-runner-control: {why}"),
        ]
    );
}

// Rule 4: the testkit is for tests.

#[test]
fn no_crate_may_ship_the_testkit() {
    let manifests = [
        depending_on("gantry-cli", &["gantry-testkit"]),
        manifest(
            "gantry-llm",
            "[dev-dependencies]\ngantry-testkit = \"0.1\"\n",
        ),
    ];
    assert_eq!(
        check(&manifests),
        [
            "gantry-cli depends on gantry-testkit: the testkit is for tests; move it to \
          [dev-dependencies] (ARCHITECTURE.md, crates/gantry-testkit)"
        ]
    );
}

// Rule 5: the pure crates have no runtime.

#[test]
fn the_pure_crates_may_not_depend_on_tokio() {
    let manifests = [
        depending_on("gantry-policy", &["tokio"]),
        manifest(
            "gantry-types",
            "[target.'cfg(unix)'.dependencies]\ntokio-util = \"0.7\"\n",
        ),
        // Their tests may.
        manifest("gantry-policy", "[dev-dependencies]\ntokio = \"1\"\n"),
    ];
    let why = "gantry-policy and gantry-types are pure: no I/O, no async; leave the runtime \
               to the engine (ARCHITECTURE.md, code map)";
    assert_eq!(
        check(&manifests),
        [
            format!("gantry-policy depends on tokio: {why}"),
            format!(
                "gantry-types depends on tokio-util (in [target.'cfg(unix)'.dependencies]): {why}"
            ),
        ]
    );
}

// The allowlist of known violations.

#[test]
fn an_allowed_violation_passes_and_a_stale_entry_fails() {
    let manifests = [depending_on("gantry-cli", &["gantry-testkit"])];
    assert_eq!(
        deps::check(&manifests, &[("gantry-cli", "gantry-testkit")]),
        Vec::<String>::new()
    );
    let fixed = [depending_on("gantry-cli", &["gantry-core"])];
    assert_eq!(
        deps::check(&fixed, &[("gantry-cli", "gantry-testkit")]),
        [
            "gantry-cli no longer breaks a rule by depending on gantry-testkit: remove \
          (\"gantry-cli\", \"gantry-testkit\") from ALLOWED in crates/gantry-tidy/tests/it/deps.rs"
        ]
    );
}

#[test]
fn a_rule_naming_no_crate_fails_unless_planned() {
    let unknown = deps::unknown_crates(
        &[depending_on("gantry-core", &[])],
        &["gantry-control-plane"],
    );
    assert!(
        unknown
            .iter()
            .any(|m| m.contains(" names gantry-types, which is no crate here"))
    );
    assert!(!unknown.iter().any(|m| m.contains("gantry-core,")));
    assert!(!unknown.iter().any(|m| m.contains("gantry-control-plane")));
    // Once it is no longer planned, a rule naming it must find it.
    let unplanned = deps::unknown_crates(&[depending_on("gantry-core", &[])], &[]);
    assert!(
        unplanned
            .iter()
            .any(|m| m.contains(" names gantry-control-plane, which is no crate here"))
    );
}

// Rule 6: file sizes.

fn lines(n: usize) -> String {
    "x\n".repeat(n)
}

#[test]
fn a_file_over_its_limit_fails() {
    let files = [
        SourceFile::new("crates/gantry-core/src/turn/big.rs", &lines(501)),
        SourceFile::new("crates/gantry-core/src/fits.rs", &lines(500)),
        SourceFile::new("crates/gantry-types/src/big.rs", &lines(501)),
        SourceFile::new("crates/gantry-llm/src/fits.rs", &lines(800)),
        SourceFile::new("crates/gantry-llm/src/a/big.rs", &lines(801)),
    ];
    assert_eq!(
        file_size::check(&files, &[]),
        [
            "crates/gantry-core/src/turn/big.rs has 501 lines, over the 500 allowed in \
             crates/gantry-core/src: split it by subject",
            "crates/gantry-types/src/big.rs has 501 lines, over the 500 allowed in \
             crates/gantry-types/src: split it by subject",
            "crates/gantry-llm/src/a/big.rs has 801 lines, over the 800 allowed in \
             crates/*/src: split it by subject",
        ]
    );
}

#[test]
fn generated_code_and_files_outside_src_have_no_limit() {
    let generated = format!(
        "// This file is @generated by prost-build.\n{}",
        lines(2000)
    );
    let files = [
        SourceFile::new("crates/proto-a/src/pb.rs", &generated),
        SourceFile::new("crates/gantry-core/tests/it/big.rs", &lines(2000)),
    ];
    assert_eq!(file_size::check(&files, &[]), Vec::<String>::new());
}

#[test]
fn an_oversized_file_may_not_grow_and_leaves_the_list_once_it_fits() {
    let listed = [("crates/gantry-cli/src/big.rs", 900)];
    let same = [SourceFile::new("crates/gantry-cli/src/big.rs", &lines(900))];
    assert_eq!(file_size::check(&same, &listed), Vec::<String>::new());
    let shrunk = [SourceFile::new("crates/gantry-cli/src/big.rs", &lines(850))];
    assert_eq!(file_size::check(&shrunk, &listed), Vec::<String>::new());

    let grown = [SourceFile::new("crates/gantry-cli/src/big.rs", &lines(901))];
    assert_eq!(
        file_size::check(&grown, &listed),
        [
            "crates/gantry-cli/src/big.rs has 901 lines, over the 800 allowed in crates/*/src \
          and over the 900 OVERSIZED lets it keep until it is split: split it, or at least \
          do not grow it"
        ]
    );
    let split = [SourceFile::new("crates/gantry-cli/src/big.rs", &lines(400))];
    assert_eq!(
        file_size::check(&split, &listed),
        [
            "crates/gantry-cli/src/big.rs has 400 lines, within the 800 allowed in crates/*/src \
          now: remove it from OVERSIZED in crates/gantry-tidy/tests/it/file_size.rs"
        ]
    );
    assert_eq!(
        file_size::check(&[], &listed),
        [
            "crates/gantry-cli/src/big.rs is in OVERSIZED but is no file under crates/*/src: \
          remove it from crates/gantry-tidy/tests/it/file_size.rs"
        ]
    );
}

// Rule 7: the code map matches the tree.

const ARCHITECTURE_MD: &str = "\
# Architecture

### `crates/not-in-the-map`

## Code map

### `crates/gantry-types`

The vocabulary.

### `crates/gantry-gone`

Removed long ago.

### `conformance/`

## Invariants

### `crates/not-in-the-map-either`
";

#[test]
fn the_code_map_is_read_from_its_section_only() {
    assert_eq!(
        code_map::sections(ARCHITECTURE_MD),
        ["gantry-types", "gantry-gone"]
    );
}

#[test]
fn a_crate_missing_from_the_code_map_or_a_section_for_no_crate_fails() {
    let dirs = ["gantry-types".to_owned(), "gantry-new".to_owned()];
    assert_eq!(
        code_map::check(ARCHITECTURE_MD, &dirs),
        [
            "crates/gantry-new has no section in ARCHITECTURE.md's code map: add \
             \"### `crates/gantry-new`\" saying what it holds and what it depends on",
            "ARCHITECTURE.md's code map has a section for crates/gantry-gone, which does not \
             exist: rename the section to the crate's directory, or remove it",
        ]
    );
    let matching = ["gantry-types".to_owned(), "gantry-gone".to_owned()];
    assert_eq!(
        code_map::check(ARCHITECTURE_MD, &matching),
        Vec::<String>::new()
    );
}

// README and the book.

fn page(path: &str, text: &str) -> Page {
    Page {
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

fn check_docs(pages: &[Page]) -> Vec<String> {
    docs::check(pages, &|path: &str| path == "docs/src/images/shot.png")
}

#[test]
fn headings_get_mdbooks_ids() {
    assert_eq!(docs::heading_id(" `gantry serve`"), "gantry-serve");
    assert_eq!(
        docs::heading_id(" Safety: policies, approvals"),
        "safety-policies-approvals"
    );
    assert_eq!(
        docs::heading_id(" The [control plane](x.md)"),
        "the-control-plane"
    );
}

#[test]
fn a_broken_link_an_unknown_anchor_and_an_unlisted_page_fail() {
    let pages = [
        page(
            "README.md",
            "# G\n[ok](docs/src/a.md#the-part) ![shot](docs/src/images/shot.png)\n\
             [gone](docs/src/gone.md) [bad](docs/src/a.md#nowhere) `[code](not/a/link.md)`\n",
        ),
        page("docs/src/SUMMARY.md", "- [A](a.md)\n"),
        page(
            "docs/src/a.md",
            "# A\n## The part\n```sh\ngantry --help\n```\n",
        ),
        page("docs/src/b.md", "# B\n```bash\nls\n```\n"),
    ];
    let failures = check_docs(&pages);
    let expected = [
        "README.md:3: the link to docs/src/gone.md leads to docs/src/gone.md, which does not exist",
        "README.md:3: docs/src/a.md has no heading with the id #nowhere",
        "docs/src/b.md:2: a code block opens with ```bash",
        "docs/src/b.md is not in docs/src/SUMMARY.md",
    ];
    assert_eq!(failures.len(), expected.len(), "{failures:#?}");
    for (failure, expected) in failures.iter().zip(expected) {
        assert!(
            failure.starts_with(expected),
            "{failure}\nexpected: {expected}"
        );
    }
}

#[test]
fn a_readme_past_its_length_fails() {
    let long = "line\n".repeat(docs::README_MAX_LINES + 1);
    let failures = check_docs(&[page("README.md", &long)]);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with("README.md has 301 lines"),
        "{failures:?}"
    );
}
