//! Turning `--model`, `--base-url` and the API key into a model client.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use gantry_core::{ModelResolver, SingleModel};
use gantry_llm::ClientConfig;
use gantry_llm::openai_chat::OpenAiChatClient;
use gantry_testkit::{MockLlm, Script};

use crate::args::ExecArgs;

/// The prefix of scripted models.
const SCRIPTED: &str = "scripted:";

/// A resolver for `model`, and the in-process mock server that backs it when
/// the model is scripted (kept alive as long as the resolver is used).
pub struct ModelSetup {
    pub resolver: Arc<dyn ModelResolver>,
    pub _mock: Option<MockLlm>,
}

/// Builds the client for `model` from the exec flags.
pub fn setup(model: &str, args: &ExecArgs) -> Result<ModelSetup> {
    if let Some(file) = model.strip_prefix(SCRIPTED) {
        let script = Script::from_file(Path::new(file))
            .with_context(|| format!("cannot load the model script {file}"))?;
        let mock = MockLlm::start(script).context("cannot start the scripted model server")?;
        let mut config = ClientConfig::new(mock.base_url());
        config.retry.max_retries = args.max_retries;
        let client = OpenAiChatClient::new(config)?;
        return Ok(ModelSetup {
            resolver: Arc::new(SingleModel(Arc::new(client))),
            _mock: Some(mock),
        });
    }
    let api_key = std::env::var(&args.api_key_env)
        .ok()
        .filter(|k| !k.trim().is_empty());
    if api_key.is_none() && !is_local(&args.base_url) {
        bail!(
            "no API key: set {} (or name another variable with --api-key-env), or try the scripted demo: gantry exec --model scripted:examples/demo.json \"...\"",
            args.api_key_env
        );
    }
    let mut config = ClientConfig::new(args.base_url.clone());
    config.api_key = api_key;
    config.retry.max_retries = args.max_retries;
    let client = OpenAiChatClient::new(config)?;
    Ok(ModelSetup {
        resolver: Arc::new(SingleModel(Arc::new(client))),
        _mock: None,
    })
}

/// For commands that run no turn: any model request is refused.
pub struct NoModel;

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
