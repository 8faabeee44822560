//! The configuration file: providers, their models, the default model,
//! catalog overrides, agents, the engine's store and the workspaces the
//! operator trusts. `--config FILE`, else `$XDG_CONFIG_HOME/gantry/config.toml`
//! (else `~/.config/gantry/config.toml`); a missing default file is an empty
//! configuration. Every error is one line naming the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use gantry_core::{AgentSpec, Engine, ProvidersConfig};
use gantry_types::AgentId;
use gantry_types::{ProviderConfig, ProviderKind};
use proto_rome::{AgentProfile, Profiles};
use serde::Deserialize;

/// The file's shape.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    default_model: Option<String>,
    /// The engine's store URL (`--store` overrides it).
    store: Option<String>,
    #[serde(default)]
    providers: BTreeMap<String, ProviderEntry>,
    #[serde(default)]
    models: BTreeMap<String, toml::Value>,
    #[serde(default)]
    agents: BTreeMap<String, AgentEntry>,
    /// Workspaces whose own skills may grant their `allowed-tools`
    /// (`--trust-workspace` adds to them): absolute, or relative to the
    /// file's directory.
    #[serde(default)]
    trusted_workspaces: Vec<PathBuf>,
}

/// `[agents.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    model: Option<String>,
    reasoning: Option<String>,
    instructions: Option<String>,
    allowed_tools: Option<Vec<String>>,
    /// A JSON Schema: an inline table, or the path of a JSON file
    /// (relative to the config file's directory).
    output_schema: Option<toml::Value>,
}

/// An agent the config file declares: the engine's agent and what Rome
/// adds to it.
#[derive(Debug, Clone)]
pub(crate) struct DeclaredAgent {
    pub spec: AgentSpec,
    pub profile: AgentProfile,
}

/// `[providers.NAME]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProviderEntry {
    // A string, so an unknown kind gets an error naming the provider and the kinds.
    kind: String,
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    models: Vec<String>,
    tool_choice: Option<String>,
    #[serde(default = "yes")]
    stream: bool,
}

fn yes() -> bool {
    true
}

/// Loads the configuration: `explicit` (which must exist), else the default
/// file if there is one.
pub(crate) fn load(explicit: Option<&Path>) -> Result<ProvidersConfig> {
    match read(explicit)? {
        Some((path, text)) => parse(&text).map_err(|e| anyhow!("{}:{e}", path.display())),
        None => Ok(ProvidersConfig::default()),
    }
}

/// The vendors whose key variable is set, as providers on their own
/// endpoints (`anthropic`, `openai`), for a command run where no file
/// configures any and no `--base-url` is given: a client that names
/// `anthropic/claude-sonnet-4-5` then reaches it with `ANTHROPIC_API_KEY`
/// (Harbor's ACP runner passes only the environment). The default model
/// becomes the first such vendor's, unless one is set.
pub(crate) fn providers_from_env(file: &mut ProvidersConfig, base_url: Option<&str>) {
    if !file.providers.is_empty() || base_url.is_some() {
        return;
    }
    let vendors = [
        (
            "anthropic",
            ProviderKind::Anthropic,
            "ANTHROPIC_API_KEY",
            "claude-sonnet-4-5",
        ),
        (
            "openai",
            ProviderKind::OpenaiResponses,
            "OPENAI_API_KEY",
            "gpt-4.1",
        ),
    ];
    for (name, kind, key, model) in vendors {
        let set = std::env::var(key).is_ok_and(|k| !k.trim().is_empty());
        if !set {
            continue;
        }
        file.providers.push(ProviderConfig::new(name, kind));
        if file.default_model.is_none() {
            file.default_model = Some(format!("{name}/{model}"));
        }
    }
}

/// The `store` the configuration names, if any.
pub(crate) fn store_url(explicit: Option<&Path>) -> Result<Option<String>> {
    match read(explicit)? {
        Some((path, text)) => Ok(parse_file(&text)
            .map_err(|e| anyhow!("{}:{e}", path.display()))?
            .store),
        None => Ok(None),
    }
}

/// The workspaces the operator trusts: each `--trust-workspace` (relative
/// to the current directory) and the config file's `trusted_workspaces`
/// (relative to the file's directory), by their real paths when they exist.
/// Trust is only ever read from here, outside any workspace; a config file
/// inside a trusted workspace is refused, as the workspace could then
/// rewrite the setting that trusts it.
pub(crate) fn trusted_workspaces(global: &crate::args::Global) -> Result<Vec<PathBuf>> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut dirs = Vec::new();
    for dir in &global.trust_workspace {
        dirs.push(trusted_dir(&cwd, dir).map_err(|e| anyhow!("--trust-workspace: {e}"))?);
    }
    let Some((path, text)) = read(global.config.as_deref())? else {
        return Ok(dirs);
    };
    let file = parse_file(&text).map_err(|e| anyhow!("{}:{e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    for dir in &file.trusted_workspaces {
        dirs.push(
            trusted_dir(&cwd.join(base), dir)
                .map_err(|e| anyhow!("{}: trusted_workspaces: {e}", path.display()))?,
        );
    }
    let real_file = std::fs::canonicalize(&path).unwrap_or_else(|_| cwd.join(&path));
    if let Some(dir) = dirs.iter().find(|d| real_file.starts_with(d)) {
        bail!(
            "the config file {} is inside the trusted workspace {}: a workspace must not hold \
             the settings that trust it; move the file out of it (--config FILE) or trust a \
             narrower folder",
            path.display(),
            dir.display()
        );
    }
    Ok(dirs)
}

/// `dir` (relative to `base`) as a trusted workspace: its real path if it
/// exists (threads keep theirs canonical), else the absolute path.
fn trusted_dir(base: &Path, dir: &Path) -> std::result::Result<PathBuf, String> {
    // An empty path would resolve to `base`, trusting what nobody named.
    if dir.as_os_str().is_empty() {
        return Err("an empty path".to_owned());
    }
    if dir.to_string_lossy().starts_with('~') {
        return Err(format!(
            "{}: `~` is not expanded; give an absolute path",
            dir.display()
        ));
    }
    let dir = base.join(dir);
    Ok(std::fs::canonicalize(&dir).unwrap_or(dir))
}

/// The file's path and text: `explicit` (which must exist), else the
/// default file if there is one.
fn read(explicit: Option<&Path>) -> Result<Option<(PathBuf, String)>> {
    let (path, required) = match explicit {
        Some(p) => (p.to_path_buf(), true),
        None => match default_path() {
            Some(p) => (p, false),
            None => return Ok(None),
        },
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some((path, text))),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => bail!("cannot read config {}: {e}", path.display()),
    }
}

/// Reads the file's text; errors start with `LINE:COL: `.
fn parse_file(text: &str) -> std::result::Result<File, String> {
    toml::from_str(text).map_err(|e| {
        let (line, col) = e.span().map_or((1, 1), |span| line_col(text, span.start));
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        format!("{line}:{col}: invalid config: {message}")
    })
}

/// The agents the configuration declares (`[agents.NAME]`): none without
/// a file.
pub(crate) fn agents(explicit: Option<&Path>) -> Result<Vec<DeclaredAgent>> {
    let Some((path, text)) = read(explicit)? else {
        return Ok(Vec::new());
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    parse_file(&text)
        .and_then(|file| declared(file.agents, dir))
        .map_err(|e| anyhow!("{}:{e}", path.display()))
}

/// Saves the declared agents in the engine (id and name: the table's
/// name) and returns what Rome adds to them, by name.
pub(crate) async fn register_agents(
    engine: &Engine,
    agents: Vec<DeclaredAgent>,
) -> Result<Profiles> {
    let mut profiles = Profiles::new();
    for agent in agents {
        let name = agent.spec.name.clone().unwrap_or_default();
        engine
            .agents()
            .save(agent.spec)
            .await
            .with_context(|| format!("config: agent `{name}`"))?;
        profiles.insert(name, agent.profile);
    }
    Ok(profiles)
}

fn declared(
    agents: BTreeMap<String, AgentEntry>,
    dir: &Path,
) -> std::result::Result<Vec<DeclaredAgent>, String> {
    agents
        .into_iter()
        .map(|(name, entry)| {
            let output_schema = match entry.output_schema {
                None => None,
                Some(toml::Value::String(file)) => Some(
                    schema_file(&dir.join(&file))
                        .map_err(|e| format!(" agent `{name}`: output_schema: {e}"))?,
                ),
                Some(table @ toml::Value::Table(_)) => Some(
                    serde_json::to_value(&table)
                        .map_err(|e| format!(" agent `{name}`: output_schema: {e}"))?,
                ),
                Some(_) => {
                    return Err(format!(
                        " agent `{name}`: output_schema: a table (the JSON Schema) or the \
                         path of a JSON file"
                    ));
                }
            };
            Ok(DeclaredAgent {
                spec: AgentSpec {
                    id: Some(AgentId::from(name.as_str())),
                    name: Some(name),
                    model: entry.model,
                    reasoning: entry.reasoning,
                    instructions: entry.instructions,
                    ..AgentSpec::default()
                },
                profile: AgentProfile {
                    allowed_tools: entry.allowed_tools,
                    output_schema,
                },
            })
        })
        .collect()
}

fn schema_file(path: &Path) -> std::result::Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))
}

/// Parses the file's text; errors start with `LINE:COL: ` or ` ` + the item.
fn parse(text: &str) -> std::result::Result<ProvidersConfig, String> {
    let file = parse_file(text)?;
    let mut providers = Vec::with_capacity(file.providers.len());
    for (name, entry) in file.providers {
        let kind: ProviderKind = entry
            .kind
            .parse()
            .map_err(|e| format!(" provider `{name}`: {e}"))?;
        providers.push(ProviderConfig {
            name,
            kind,
            base_url: entry.base_url,
            api_key: entry.api_key,
            api_key_env: entry.api_key_env,
            headers: entry.headers,
            models: entry.models,
            tool_choice: entry.tool_choice,
            stream: entry.stream,
        });
    }
    let models = file
        .models
        .into_iter()
        .map(|(id, value)| {
            serde_json::to_value(&value)
                .map(|v| (id.clone(), v))
                .map_err(|e| format!(" model `{id}`: {e}"))
        })
        .collect::<std::result::Result<_, _>>()?;
    Ok(ProvidersConfig {
        providers,
        default_model: file.default_model,
        models,
        ..ProvidersConfig::default()
    })
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The configuration file in use: `explicit`, else the default path
/// (which may not exist). Sandboxed commands may not read it: it can hold
/// literal keys.
pub(crate) fn file_path(explicit: Option<&Path>) -> Option<PathBuf> {
    explicit.map(Path::to_path_buf).or_else(default_path)
}

fn default_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("gantry/config.toml"));
    }
    std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .map(|home| PathBuf::from(home).join(".config/gantry/config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_example_parses() {
        let config = parse(
            r#"
default_model = "anthropic/claude-sonnet-4-5"
store = "postgres://gantry@db/gantry"
[providers.anthropic]
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
[providers.local]
kind = "openai-chat"
base_url = "http://localhost:11434/v1"
models = ["qwen3-coder"]
headers = { "X-Title" = "gantry" }
[models."qwen3-coder"]
limit = { context = 32768, output = 8192 }
"#,
        )
        .unwrap();
        assert_eq!(config.providers.len(), 2);
        assert_eq!(config.providers[1].kind, ProviderKind::OpenaiChat);
        assert_eq!(config.providers[1].models, ["qwen3-coder"]);
        assert_eq!(config.models["qwen3-coder"]["limit"]["context"], 32768);
        assert_eq!(
            config.default_model.as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        let file = parse_file("store = \"postgres://gantry@db/gantry\"\n").unwrap();
        assert_eq!(file.store.as_deref(), Some("postgres://gantry@db/gantry"));
    }

    #[test]
    fn agents_take_an_inline_schema_or_a_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("triage.json"), r#"{"type":"object"}"#).unwrap();
        let file = parse_file(
            r#"
[agents.main]
model = "mock/m"
instructions = "Be brief."
allowed_tools = ["read_file", "Bash(git *)"]
[agents.triage]
output_schema = "triage.json"
[agents.inline.output_schema]
type = "object"
required = ["label"]
properties = { label = { type = "string" } }
"#,
        )
        .unwrap();
        let agents = declared(file.agents, dir.path()).unwrap();
        let by = |n: &str| {
            agents
                .iter()
                .find(|a| a.spec.name.as_deref() == Some(n))
                .unwrap()
        };
        assert_eq!(by("main").spec.instructions.as_deref(), Some("Be brief."));
        assert_eq!(
            by("main").profile.allowed_tools.as_deref(),
            Some(&["read_file".to_owned(), "Bash(git *)".to_owned()][..])
        );
        assert_eq!(
            by("triage").profile.output_schema,
            Some(serde_json::json!({"type": "object"}))
        );
        assert_eq!(
            by("inline").profile.output_schema.as_ref().unwrap()["required"][0],
            "label"
        );
        let missing = parse_file("[agents.x]\noutput_schema = \"nope.json\"\n").unwrap();
        let err = declared(missing.agents, dir.path()).unwrap_err();
        assert!(
            err.contains("agent `x`: output_schema: cannot read"),
            "{err}"
        );
    }

    fn global(config: &Path, trust: &[&Path]) -> crate::args::Global {
        crate::args::Global {
            data_dir: None,
            config: Some(config.to_path_buf()),
            pass_env: Vec::new(),
            trust_workspace: trust.iter().map(|p| p.to_path_buf()).collect(),
            no_shell_snapshot: false,
            allow_exposed_data_dir: false,
            log_format: crate::args::LogFormat::Text,
        }
    }

    #[test]
    fn trusted_workspaces_come_from_flags_and_the_config_file() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        let etc = root.join("etc");
        for dir in ["etc", "src/app", "src/lib"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let file = etc.join("config.toml");
        std::fs::write(
            &file,
            format!(
                "trusted_workspaces = [\"{}\", \"../src/lib\"]\n",
                root.join("src/app").display()
            ),
        )
        .unwrap();
        let dirs = trusted_workspaces(&global(&file, &[&root.join("src/app/../lib")])).unwrap();
        assert_eq!(
            dirs,
            [
                root.join("src/lib"),
                root.join("src/app"),
                root.join("src/lib")
            ]
        );

        // No file, no flag: nothing is trusted.
        let none = global(&root.join("missing.toml"), &[]);
        assert!(
            trusted_workspaces(&none).is_err(),
            "an explicit file must exist"
        );
        std::fs::write(&file, "").unwrap();
        assert!(trusted_workspaces(&global(&file, &[])).unwrap().is_empty());

        for bad in ["\"\"", "\"~/src\""] {
            std::fs::write(&file, format!("trusted_workspaces = [{bad}]\n")).unwrap();
            let err = trusted_workspaces(&global(&file, &[]))
                .unwrap_err()
                .to_string();
            assert!(err.contains("trusted_workspaces:"), "{err}");
        }
        let err = trusted_workspaces(&global(&file, &[Path::new("")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--trust-workspace: an empty path"), "{err}");
    }

    #[test]
    fn a_config_file_inside_a_trusted_workspace_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("config.toml");
        std::fs::write(&file, "trusted_workspaces = [\".\"]\n").unwrap();
        let err = trusted_workspaces(&global(&file, &[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is inside the trusted workspace"), "{err}");
        std::fs::write(&file, "").unwrap();
        let err = trusted_workspaces(&global(&file, &[root.path()]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("must not hold the settings that trust it"),
            "{err}"
        );
    }

    #[test]
    fn errors_are_one_line_with_a_position() {
        let err = parse("a = 1\nproviders = [\n").unwrap_err();
        assert!(err.starts_with("2:") || err.starts_with("3:"), "{err}");
        assert_eq!(err.lines().count(), 1);
        let err = parse("[providers.x]\nkind = \"openai\"\n").unwrap_err();
        assert!(
            err.contains("provider `x`: unknown provider kind `openai`"),
            "{err}"
        );
        let err = parse("[providers.x]\nkind = \"anthropic\"\napi_kee = \"k\"\n").unwrap_err();
        assert!(err.contains("api_kee"), "{err}");
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
}
