//! Turning `--model`, the config's providers, `--base-url` and the API key
//! into a model resolver.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use gantry_core::{ModelResolver, Providers, SingleModel};
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
}

/// The prefix of scripted models.
const SCRIPTED: &str = "scripted:";

/// Where requests go without a config or `--base-url`.
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

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
    model: &str,
    args: &impl ModelFlags,
    registry: Arc<Providers>,
) -> Result<ModelSetup> {
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
            "no API key: set {} (or name another variable with --api-key-env), or try the scripted demo: gantry exec --model scripted:examples/demo.json \"...\"",
            args.api_key_env()
        );
    }
    let mut config = ClientConfig::new(base_url);
    config.api_key = api_key;
    config.retry.max_retries = args.max_retries();
    let client = OpenAiChatClient::new(config)?;
    Ok(ModelSetup {
        resolver: Arc::new(Catalogued {
            client: Arc::new(client),
            catalog: registry.catalog().clone(),
        }),
        registry: None,
        _mock: None,
    })
}

/// One client for every model id, with what the catalog knows about each
/// (so turns get a cost and reasoning goes only where it is accepted).
struct Catalogued {
    client: Arc<dyn ModelClient>,
    catalog: Catalog,
}

impl ModelResolver for Catalogued {
    fn resolve(&self, _model: &str) -> Result<Arc<dyn ModelClient>, String> {
        Ok(self.client.clone())
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        self.catalog.get(model).cloned()
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
