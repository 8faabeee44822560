//! The model client a turn talks to: the thread's own model server when it
//! names one (a protocol's per-session LLM settings), else the engine's
//! resolver; with the thread's sampling settings on every request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use gantry_llm::providers::client_for;
use gantry_llm::{ClientConfig, ModelClient, ModelRequest, ModelStream, RetryPolicy};
use gantry_types::ModelEndpoint;

use crate::engine::Shared;

/// Clients of threads' own model servers, built once per server and key:
/// threads that share a server share its connection pool.
#[derive(Default)]
pub(crate) struct Endpoints {
    clients: Mutex<HashMap<ModelEndpoint, Arc<dyn ModelClient>>>,
}

impl Endpoints {
    fn client(
        &self,
        endpoint: &ModelEndpoint,
        retry: RetryPolicy,
    ) -> Result<Arc<dyn ModelClient>, String> {
        // A panicking holder cannot leave the map half-changed.
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(client) = clients.get(endpoint) {
            return Ok(client.clone());
        }
        let mut config = ClientConfig::new(
            endpoint
                .base_url
                .as_deref()
                .unwrap_or_else(|| endpoint.kind.default_base_url()),
        );
        config.api_key.clone_from(&endpoint.api_key);
        config.retry = retry;
        let client = client_for(endpoint.kind, config).map_err(|e| {
            format!(
                "the session's model server ({}): {e}",
                endpoint.kind.as_str()
            )
        })?;
        clients.insert(endpoint.clone(), client.clone());
        Ok(client)
    }
}

/// What a turn needs to know to pick its client.
pub(crate) struct ClientSpec<'a> {
    pub model: &'a str,
    pub endpoint: Option<&'a ModelEndpoint>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
}

/// The client for a turn, or a one-line reason there is none.
pub(crate) fn client(
    shared: &Shared,
    spec: &ClientSpec<'_>,
) -> Result<Arc<dyn ModelClient>, String> {
    let inner = match spec.endpoint {
        // The registry's retry policy, when the engine has one: one policy
        // for every model server the engine talks to.
        Some(endpoint) => shared.endpoints.client(
            endpoint,
            shared
                .providers
                .as_ref()
                .map_or_else(RetryPolicy::default, |p| p.retry()),
        )?,
        None => shared.models.resolve(spec.model)?,
    };
    if spec.temperature.is_none() && spec.max_output_tokens.is_none() {
        return Ok(inner);
    }
    Ok(Arc::new(Tuned {
        inner,
        temperature: spec.temperature,
        max_output_tokens: spec.max_output_tokens,
    }))
}

/// A client with the thread's sampling settings.
struct Tuned {
    inner: Arc<dyn ModelClient>,
    temperature: Option<f32>,
    max_output_tokens: Option<u32>,
}

impl ModelClient for Tuned {
    fn stream(&self, mut request: ModelRequest) -> ModelStream {
        request.temperature = request.temperature.or(self.temperature);
        request.max_output_tokens = request.max_output_tokens.or(self.max_output_tokens);
        self.inner.stream(request)
    }
}
