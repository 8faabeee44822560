//! The configuration file: providers, their models, the default model,
//! catalog overrides and the engine's store. `--config FILE`, else `$XDG_CONFIG_HOME/gantry/config.toml`
//! (else `~/.config/gantry/config.toml`); a missing default file is an empty
//! configuration. Every error is one line naming the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use gantry_core::ProvidersConfig;
use gantry_types::{ProviderConfig, ProviderKind};
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
}

/// Loads the configuration: `explicit` (which must exist), else the default
/// file if there is one.
pub(crate) fn load(explicit: Option<&Path>) -> Result<ProvidersConfig> {
    match read(explicit)? {
        Some((path, text)) => parse(&text).map_err(|e| anyhow!("{}:{e}", path.display())),
        None => Ok(ProvidersConfig::default()),
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
