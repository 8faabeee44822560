//! Reading the workspace: each crate's `Cargo.toml` (its name and every
//! dependency, by the package it really names), its `.rs` files under `src/`,
//! and `ARCHITECTURE.md`. Files only: no cargo subprocess.

use std::fs;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::file_size::SourceFile;

/// Which table of a manifest a dependency was found in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Normal,
    Build,
    Dev,
}

impl Kind {
    const ALL: [(Kind, &'static str); 3] = [
        (Kind::Normal, "dependencies"),
        (Kind::Build, "build-dependencies"),
        (Kind::Dev, "dev-dependencies"),
    ];
}

#[derive(Debug)]
pub(crate) struct Dependency {
    /// The package depended on: what `package =` says (in the crate's entry
    /// or the workspace's it inherits), else the key.
    pub name: String,
    pub kind: Kind,
    /// The table it was found in, for messages: `[dependencies]`,
    /// `[target.'cfg(unix)'.build-dependencies]`.
    pub section: String,
}

#[derive(Debug)]
pub(crate) struct Manifest {
    /// The package name.
    pub name: String,
    pub dependencies: Vec<Dependency>,
}

impl Manifest {
    /// What the crate's users build too: every dependency but the
    /// dev-dependencies (tests may use anything).
    pub(crate) fn shipped(&self) -> impl Iterator<Item = &Dependency> {
        self.dependencies.iter().filter(|d| d.kind != Kind::Dev)
    }
}

/// The root manifest's `[workspace.dependencies]` (empty if it has none).
pub(crate) fn workspace_dependencies(root_manifest: &str) -> Result<Table, String> {
    let root: Table = root_manifest.parse().map_err(|e| format!("{e}"))?;
    Ok(root
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(Value::as_table)
        .cloned()
        .unwrap_or_default())
}

/// Parses one crate's manifest; `workspace` is the root's
/// `[workspace.dependencies]`, for entries with `workspace = true`.
pub(crate) fn parse(text: &str, workspace: &Table) -> Result<Manifest, String> {
    let table: Table = text.parse().map_err(|e| format!("{e}"))?;
    let name = table
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or("no [package] name")?
        .to_owned();
    let mut dependencies = Vec::new();
    for (kind, key) in Kind::ALL {
        collect(
            &table,
            kind,
            key,
            &format!("[{key}]"),
            workspace,
            &mut dependencies,
        );
    }
    if let Some(targets) = table.get("target").and_then(Value::as_table) {
        for (cfg, target) in targets {
            let Some(target) = target.as_table() else {
                continue;
            };
            for (kind, key) in Kind::ALL {
                let section = format!("[target.'{cfg}'.{key}]");
                collect(target, kind, key, &section, workspace, &mut dependencies);
            }
        }
    }
    Ok(Manifest { name, dependencies })
}

fn collect(
    table: &Table,
    kind: Kind,
    key: &str,
    section: &str,
    workspace: &Table,
    out: &mut Vec<Dependency>,
) {
    let Some(entries) = table.get(key).and_then(Value::as_table) else {
        return;
    };
    for (key, entry) in entries {
        let inherited = entry.get("workspace").and_then(Value::as_bool) == Some(true);
        let renamed = entry
            .get("package")
            .or_else(|| {
                inherited
                    .then(|| workspace.get(key)?.get("package"))
                    .flatten()
            })
            .and_then(Value::as_str);
        out.push(Dependency {
            name: renamed.unwrap_or(key).to_owned(),
            kind,
            section: section.to_owned(),
        });
    }
}

/// The workspace this crate lives in, as read from disk.
pub(crate) struct Workspace {
    pub root: PathBuf,
    /// The directories under `crates/` that hold a `Cargo.toml`, sorted.
    pub crate_dirs: Vec<String>,
    pub manifests: Vec<Manifest>,
}

impl Workspace {
    pub(crate) fn load() -> Workspace {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let root = root.canonicalize().unwrap_or(root);
        let workspace = workspace_dependencies(&read(&root.join("Cargo.toml")))
            .unwrap_or_else(|e| panic!("the root Cargo.toml: {e}"));
        let mut crate_dirs = Vec::new();
        let mut manifests = Vec::new();
        for dir in sorted_entries(&root.join("crates")) {
            let path = dir.join("Cargo.toml");
            if !path.is_file() {
                continue;
            }
            let manifest = parse(&read(&path), &workspace)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            crate_dirs.push(file_name(&dir));
            manifests.push(manifest);
        }
        Workspace {
            root,
            crate_dirs,
            manifests,
        }
    }

    /// Every `.rs` file under `crates/*/src`, paths relative to the root.
    pub(crate) fn source_files(&self) -> Vec<SourceFile> {
        let mut files = Vec::new();
        for dir in &self.crate_dirs {
            let src = Path::new("crates").join(dir).join("src");
            walk(&self.root, &src, &mut files);
        }
        files
    }

    pub(crate) fn architecture_md(&self) -> String {
        read(&self.root.join("ARCHITECTURE.md"))
    }
}

fn walk(root: &Path, relative: &Path, out: &mut Vec<SourceFile>) {
    let full = root.join(relative);
    if !full.is_dir() {
        return;
    }
    for entry in sorted_entries(&full) {
        let relative = relative.join(file_name(&entry));
        if entry.is_dir() {
            walk(root, &relative, out);
        } else if entry.extension().is_some_and(|e| e == "rs") {
            let path = relative.to_string_lossy().replace('\\', "/");
            out.push(SourceFile::new(path, &read(&entry)));
        }
    }
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut paths: Vec<PathBuf> = entries
        .map(|e| {
            e.unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path()
        })
        .collect();
    paths.sort();
    paths
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
