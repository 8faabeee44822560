//! Turning `--model`, the config's providers, `--base-url` and the API key
//! into a model resolver.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use gantry_core::{EngineConfig, ModelResolver, Providers, SingleModel};
use gantry_llm::catalog::Catalog;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_llm::{ClientConfig, ModelClient};
use gantry_scripted_model::{MockLlm, Script};
use gantry_types::ModelInfo;

/// The flags that choose how models are reached (`gantry exec` and
/// `gantry acp` share them).
pub(crate) trait ModelFlags {
    /// `--base-url`.
    fn base_url(&self) -> Option<&str>;
    /// `--api-key-env`.
    fn api_key_env(&self) -> &str;
    /// `--max-retries`.
    fn max_retries(&self) -> u32;
    /// `--tool-choice`, `--no-stream`, `--context-window`.
    fn server(&self) -> &crate::args::ServerArgs;
}

impl ModelFlags for crate::args::ExecArgs {
    fn base_url(&self) -> Option<&str> {
        self.base_url.as_deref()
    }
    fn api_key_env(&self) -> &str {
        &self.api_key_env
    }
    fn max_retries(&self) -> u32 {
        self.max_retries
    }
    fn server(&self) -> &crate::args::ServerArgs {
        &self.server
    }
}

/// The prefix of scripted models.
const SCRIPTED: &str = "scripted:";

/// Where requests go without a config or `--base-url`.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The model a command runs, and whether anyone chose it.
pub(crate) struct Chosen {
    /// The model id.
    pub id: String,
    /// No `--model` and no default model in the config: the built-in one.
    pub builtin_default: bool,
    /// The config file, to say where a default model goes.
    pub config_file: Option<PathBuf>,
}

impl Chosen {
    /// `--model` if given, else the configured default model, else the
    /// built-in default.
    pub(crate) fn new(flag: Option<&str>, registry: &Providers, config: Option<&Path>) -> Self {
        let chosen = flag
            .filter(|m| !m.trim().is_empty())
            .map(str::to_owned)
            .or_else(|| registry.default_model());
        Self {
            builtin_default: chosen.is_none(),
            id: chosen.unwrap_or_else(|| EngineConfig::default().default_model),
            config_file: crate::config::file_path(config),
        }
    }

    /// A model a stored thread names.
    pub(crate) fn stored(id: String) -> Self {
        Self {
            id,
            builtin_default: false,
            config_file: None,
        }
    }

    /// Why the built-in default cannot run on the configured providers,
    /// and how to choose a model they serve.
    fn none_chosen(&self, registry: &Providers) -> anyhow::Error {
        let providers = registry.list();
        let names: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
        // A model a provider lists makes a ready-to-paste example.
        let example = providers
            .iter()
            .find_map(|p| p.models.first().map(|m| format!("{}/{m}", p.name)))
            .unwrap_or_else(|| format!("{}/MODEL", names.first().unwrap_or(&"PROVIDER")));
        let file = self
            .config_file
            .as_ref()
            .map_or_else(|| "the config file".to_owned(), |f| f.display().to_string());
        anyhow!(
            "no model chosen, and none of the configured providers ({}) serves the built-in \
             default {}: pass --model {example}, or set default_model = \"{example}\" in {file}",
            names.join(", "),
            self.id
        )
    }
}

/// A resolver for `model`, and the in-process mock server that backs it when
/// the model is scripted (kept alive as long as the resolver is used).
pub(crate) struct ModelSetup {
    pub resolver: Arc<dyn ModelResolver>,
    /// Set when the config's providers serve the model: the engine manages them.
    pub registry: Option<Arc<Providers>>,
    pub _mock: Option<MockLlm>,
}

/// Builds the resolver for `model`: a scripted model; else the flags' single
/// OpenAI-compatible server when `--base-url` is given or no provider is
/// configured (as before there was a config); else the config's providers.
/// Fails with one line when the model cannot be served (unknown provider,
/// missing key variable).
pub(crate) fn setup(
    chosen: &Chosen,
    args: &impl ModelFlags,
    registry: Arc<Providers>,
) -> Result<ModelSetup> {
    let model = chosen.id.as_str();
    if let Some(file) = model.strip_prefix(SCRIPTED) {
        let script = Script::from_file(Path::new(file))
            .with_context(|| format!("cannot load the model script {file}"))?;
        let mock = MockLlm::start(script).context("cannot start the scripted model server")?;
        let mut config = ClientConfig::new(mock.base_url());
        config.retry.max_retries = args.max_retries();
        let client = OpenAiChatClient::new(config)?;
        return Ok(ModelSetup {
            resolver: Arc::new(SingleModel(Arc::new(client))),
            registry: None,
            _mock: Some(mock),
        });
    }
    if args.base_url().is_none() && !registry.is_empty() {
        if chosen.builtin_default && registry.route_of(model).is_err() {
            return Err(chosen.none_chosen(&registry));
        }
        registry.resolve(model).map_err(|e| anyhow!(e))?;
        return Ok(ModelSetup {
            resolver: registry.clone(),
            registry: Some(registry),
            _mock: None,
        });
    }
    let base_url = args.base_url().unwrap_or(DEFAULT_BASE_URL);
    // The key's variable is not for the agent's commands, whatever its name.
    gantry_tools::sandbox::child_env::hide(args.api_key_env());
    let api_key = std::env::var(args.api_key_env())
        .ok()
        .filter(|k| !k.trim().is_empty());
    if api_key.is_none() && !is_local(base_url) {
        bail!(
            "no API key for {model} at {base_url}: set {} (or name another variable with \
             --api-key-env), or {}",
            args.api_key_env(),
            keyless_try()
        );
    }
    let mut config = ClientConfig::new(base_url);
    config.api_key = api_key;
    config.retry.max_retries = args.max_retries();
    config.tool_choice = args.server().tool_choice.clone();
    config.stream = !args.server().no_stream;
    let client = OpenAiChatClient::new(config)?;
    Ok(ModelSetup {
        resolver: Arc::new(Catalogued {
            client: Arc::new(client),
            catalog: registry.catalog().clone(),
            context_window: args.server().context_window,
        }),
        registry: None,
        _mock: None,
    })
}

/// The README's demo script, from the root of a checkout.
const DEMO: &str = "examples/demo.json";

/// What to run without a key: the demo where its script is at hand (in a
/// checkout, as the README's Quickstart runs), else the example of
/// `gantry exec --help` that writes a script of its own.
fn keyless_try() -> String {
    if Path::new(DEMO).is_file() {
        format!(
            "try the scripted demo, which needs none: gantry exec --model scripted:{DEMO} \
             \"write a greeting script\""
        )
    } else {
        "run a scripted model, which needs none (--model scripted:FILE): see the last example \
         of gantry exec --help"
            .to_owned()
    }
}

/// One client for every model id, with what the catalog knows about each
/// (so turns get a cost and reasoning goes only where it is accepted).
struct Catalogued {
    client: Arc<dyn ModelClient>,
    catalog: Catalog,
    /// `--context-window`: what is known of a model the catalog is not.
    context_window: Option<u64>,
}

impl ModelResolver for Catalogued {
    fn resolve(&self, _model: &str) -> Result<Arc<dyn ModelClient>, String> {
        Ok(self.client.clone())
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        let mut info = match (self.catalog.get(model), self.context_window) {
            (Some(info), _) => info.clone(),
            (None, Some(_)) => ModelInfo {
                id: model.to_owned(),
                name: model.to_owned(),
                // Asked with tools, it is taken to call them.
                tool_call: true,
                ..ModelInfo::default()
            },
            (None, None) => return None,
        };
        if let Some(window) = self.context_window {
            info.limit.context = window;
        }
        Some(info)
    }
}

/// For commands that run no turn: any model request is refused.
pub(crate) struct NoModel;

impl ModelResolver for NoModel {
    fn resolve(&self, model: &str) -> Result<Arc<dyn gantry_llm::ModelClient>, String> {
        Err(format!("no client for model {model} in this command"))
    }
}

/// Local servers (Ollama, vLLM on this machine) usually need no key.
fn is_local(base_url: &str) -> bool {
    let rest = base_url.split("://").nth(1).unwrap_or(base_url);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']')
            .next()
            .map_or(host, |h| h.trim_start_matches('['))
    } else {
        host.split(':').next().unwrap_or(host)
    };
    matches!(host, "localhost" | "::1") || host.starts_with("127.")
}

#[cfg(test)]
mod tests {
    use super::is_local;

    #[test]
    fn local_hosts_need_no_key() {
        assert!(is_local("http://localhost:11434/v1"));
        assert!(is_local("http://127.0.0.1:8000"));
        assert!(is_local("http://[::1]:8000/v1"));
        assert!(!is_local("https://api.openai.com/v1"));
        assert!(!is_local("https://localhost.example.com/v1"));
    }
}
