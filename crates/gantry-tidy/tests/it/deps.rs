//! What each crate may depend on: the architecture at a glance.
//!
//! Rules bind what a crate's users build too: `[dependencies]` and
//! `[build-dependencies]`, target-specific ones included.
//! `[dev-dependencies]` are free: tests may use anything.
//! Patterns are crate names where `*` matches any run of characters.

use std::collections::BTreeSet;

use crate::manifest::Manifest;

/// The engine and every crate it depends on. A crate `gantry-core` starts
/// to depend on joins this list (the check fails until it does), so the
/// engine's rules bind everything the engine builds.
pub(crate) const ENGINE: &[&str] = &[
    "gantry-core",
    "gantry-types",
    "gantry-policy",
    "gantry-llm",
    "gantry-tools",
    "gantry-store",
    "gantry-sqlite",
    "gantry-postgres",
    "gantry-checkpoint",
];

/// Wire formats and the crates that speak them.
const WIRE: &[&str] = &[
    "proto-*",
    "gantry-grpc",
    "gantry-runner-protocol",
    "gantry-control-plane",
    "gantry-web",
    "gantry-cli",
    // OTLP: traces are built from the engine's events, outside it.
    "gantry-telemetry",
    "opentelemetry*",
    "tonic",
    "tonic-*",
    "prost",
    "prost-*",
    "axum",
    "axum-*",
];

pub(crate) struct Rule {
    /// The crates bound.
    pub crates: &'static [&'static str],
    /// What they may not depend on.
    pub forbidden: &'static [&'static str],
    /// The message's tail: the reason, and what to do instead.
    pub why: &'static str,
}

pub(crate) const RULES: &[Rule] = &[
    // 1. The engine and everything under it.
    Rule {
        crates: ENGINE,
        forbidden: WIRE,
        why: "the engine knows no wire format (ARCHITECTURE.md, Invariants)",
    },
    // 2. Adapters: every `proto-*` crate (proto-code-agent, proto-codewhale, proto-pando,
    // proto-rome, proto-http, proto-acp, proto-runner-control, ...).
    Rule {
        crates: &["proto-*"],
        forbidden: &["proto-*"],
        why: "an adapter never uses another adapter; share code through \
              gantry-core or gantry-grpc (ARCHITECTURE.md, Invariants)",
    },
    Rule {
        crates: &["proto-*"],
        forbidden: &["gantry-store"],
        why: "adapters go through the engine; use what gantry-core exports \
              (ARCHITECTURE.md, Invariants)",
    },
    // 3. The control plane and the protocol it shares with the runner.
    Rule {
        crates: &["gantry-control-plane"],
        forbidden: &["gantry-core"],
        why: "the control plane keeps no engine; runners dial it over gRPC \
              (ARCHITECTURE.md, Bird's-eye view)",
    },
    Rule {
        crates: &["gantry-control-plane"],
        forbidden: &["gantry-store"],
        why: "the control plane keeps its own store (its src/store/); gantry-store \
              is the engine's (ARCHITECTURE.md, crates/gantry-control-plane)",
    },
    Rule {
        crates: &["gantry-runner-protocol"],
        forbidden: &[
            "gantry-core",
            "gantry-store",
            "gantry-control-plane",
            "proto-*",
        ],
        why: "the runner protocol is shared by the runner and the control plane, \
              so it pulls in neither (ARCHITECTURE.md, crates/gantry-runner-protocol)",
    },
    Rule {
        crates: &["gantry-web"],
        forbidden: &[
            "gantry-core",
            "gantry-store",
            "gantry-control-plane",
            "proto-*",
        ],
        why: "gantry-web is shared by the engine's HTTP API and the control plane, \
              so it pulls in neither (ARCHITECTURE.md, crates/gantry-web)",
    },
    // 4. How the stores open their databases.
    Rule {
        crates: &["gantry-sqlite", "gantry-postgres"],
        forbidden: &["gantry-*", "proto-*"],
        why: "the database openers are shared by the engine's store and the control \
              plane's, so they depend on neither, nor on anything else of ours \
              (ARCHITECTURE.md, crates/gantry-sqlite)",
    },
    // 5. The testkit.
    Rule {
        crates: &["*"],
        forbidden: &["gantry-testkit"],
        why: "the testkit is for tests; move it to [dev-dependencies] \
              (ARCHITECTURE.md, crates/gantry-testkit)",
    },
    // 6. The pure crates.
    Rule {
        crates: &["gantry-policy", "gantry-types"],
        forbidden: &["tokio", "tokio-*"],
        why: "gantry-policy and gantry-types are pure: no I/O, no async; \
              leave the runtime to the engine (ARCHITECTURE.md, code map)",
    },
    // 7. The ATIF mapping: data in, data out, shared by the CLI and the HTTP
    // API, so it sits under both and reads no engine.
    Rule {
        crates: &["gantry-atif"],
        forbidden: &["gantry-core", "gantry-store", "proto-*", "tokio", "tokio-*"],
        why: "gantry-atif maps a thread's events to ATIF and does no I/O; \
              its callers read the events (ARCHITECTURE.md, crates/gantry-atif)",
    },
];

/// Crates the rules name that may not exist yet: a rule about one of them
/// binds nothing until it does. Any other name a rule spells must be a
/// crate of the workspace, so a typo is not a rule that never fires.
pub(crate) const PLANNED: &[&str] = &[];

/// Known violations, each being fixed: (crate, dependency). An entry that
/// no longer matches a violation fails the check, so the list only shrinks.
pub(crate) const ALLOWED: &[(&str, &str)] = &[];

/// Every broken rule in `manifests` not in `allowed`, and every entry of
/// `allowed` that matches nothing.
pub(crate) fn check(manifests: &[Manifest], allowed: &[(&str, &str)]) -> Vec<String> {
    let mut found: Vec<(&str, &str, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for manifest in manifests {
        for rule in RULES
            .iter()
            .filter(|r| any_matches(r.crates, &manifest.name))
        {
            for dep in manifest.shipped() {
                if any_matches(rule.forbidden, &dep.name)
                    && seen.insert((&manifest.name, &dep.name))
                {
                    let message = format!(
                        "{} depends on {}{}: {}",
                        manifest.name,
                        dep.name,
                        where_(&dep.section),
                        rule.why
                    );
                    found.push((&manifest.name, &dep.name, message));
                }
            }
        }
    }
    // The engine's rules bind every crate of ours it builds.
    let ours: BTreeSet<&str> = manifests.iter().map(|m| m.name.as_str()).collect();
    for manifest in manifests
        .iter()
        .filter(|m| ENGINE.contains(&m.name.as_str()))
    {
        for dep in manifest.shipped() {
            let new_to_engine =
                ours.contains(dep.name.as_str()) && !ENGINE.contains(&dep.name.as_str());
            if new_to_engine && seen.insert((&manifest.name, &dep.name)) {
                let message = format!(
                    "{} depends on {}{}: the engine's rules bind every crate it builds; \
                     add {} to ENGINE in crates/gantry-tidy/tests/it/deps.rs",
                    manifest.name,
                    dep.name,
                    where_(&dep.section),
                    dep.name
                );
                found.push((&manifest.name, &dep.name, message));
            }
        }
    }

    let mut failures = Vec::new();
    for (krate, dep, message) in &found {
        if !allowed.contains(&(*krate, *dep)) {
            failures.push(message.clone());
        }
    }
    for (krate, dep) in allowed {
        if !found.iter().any(|(k, d, _)| k == krate && d == dep) {
            failures.push(format!(
                "{krate} no longer breaks a rule by depending on {dep}: \
                 remove ({krate:?}, {dep:?}) from ALLOWED in crates/gantry-tidy/tests/it/deps.rs"
            ));
        }
    }
    failures
}

/// Every crate of ours a rule names (`gantry-*`, `proto-*`, no `*`) that is
/// not in `manifests` nor in `planned` ([`PLANNED`] for this workspace).
pub(crate) fn unknown_crates(manifests: &[Manifest], planned: &[&str]) -> Vec<String> {
    let names = RULES
        .iter()
        .flat_map(|r| r.crates.iter().chain(r.forbidden))
        .filter(|p| !p.contains('*') && (p.starts_with("gantry-") || p.starts_with("proto-")));
    let mut unknown: BTreeSet<String> = BTreeSet::new();
    for name in names {
        if !planned.contains(name) && !manifests.iter().any(|m| m.name == *name) {
            unknown.insert(format!(
                "a rule in crates/gantry-tidy/tests/it/deps.rs names {name}, which is no crate here: \
                 fix the name, or list it in PLANNED if it is to come"
            ));
        }
    }
    unknown.into_iter().collect()
}

fn where_(section: &str) -> String {
    if section == "[dependencies]" {
        String::new()
    } else {
        format!(" (in {section})")
    }
}

fn any_matches(patterns: &[&str], name: &str) -> bool {
    patterns.iter().any(|p| glob(p, name))
}

/// `*` matches any run of characters (none included); all else itself.
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, tail)) => {
            let Some(rest) = name.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len()).any(|i| rest.is_char_boundary(i) && glob(tail, &rest[i..]))
        }
    }
}
