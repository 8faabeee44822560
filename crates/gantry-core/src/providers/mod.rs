//! The provider registry: providers from the configuration file merged with
//! those added through the engine API (persisted in the store, which wins),
//! the default model, and the model catalog. It is the engine's
//! [`ModelResolver`]: `provider/model` or a plain model id becomes a client.

mod api;

pub use api::ModelProviders;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use gantry_llm::catalog::Catalog;
use gantry_llm::providers::client_for;
use gantry_llm::{ClientConfig, ModelClient, ModelRequest, ModelStream, RetryPolicy};
use gantry_store::Store;
use gantry_types::{ModelInfo, ProviderConfig};
use serde_json::Value;

use crate::{EngineError, ModelResolver};

/// The store setting that holds the default model.
pub const DEFAULT_MODEL_SETTING: &str = "default_model";

/// What the configuration file says about providers and models.
#[derive(Debug, Clone, Default)]
pub struct ProvidersConfig {
    /// Providers defined in the file.
    pub providers: Vec<ProviderConfig>,
    /// The default model (`provider/model` or a plain id).
    pub default_model: Option<String>,
    /// Catalog additions and overrides by model id, each a (partial) entry
    /// in the models.dev shape.
    pub models: BTreeMap<String, Value>,
    /// Retries of every client built.
    pub retry: RetryPolicy,
}

/// Mutable state, changed only by the CRUD methods.
#[derive(Default)]
struct State {
    providers: BTreeMap<String, ProviderConfig>,
    default_model: Option<String>,
}

/// Providers, default model and catalog; resolves model ids to clients.
pub struct Providers {
    store: Arc<dyn Store>,
    catalog: Catalog,
    retry: RetryPolicy,
    /// Names defined in the configuration file: those cannot be removed
    /// through the API (they would come back at the next start).
    from_config: BTreeSet<String>,
    state: RwLock<State>,
    /// Built clients by provider name; dropped when the provider changes.
    clients: Mutex<HashMap<String, Arc<dyn ModelClient>>>,
    /// Serializes CRUD so the store and `state` agree.
    writes: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("providers", &self.list())
            .field("default_model", &self.default_model())
            .finish()
    }
}

impl Providers {
    /// Builds the registry from `config` and what `store` holds (stored
    /// providers replace configured ones of the same name; a stored default
    /// model replaces the configured one). Fails with one line on an invalid
    /// provider or catalog override.
    pub async fn load(store: Arc<dyn Store>, config: ProvidersConfig) -> Result<Self, EngineError> {
        let catalog = Catalog::builtin()
            .with_overrides(&config.models)
            .map_err(EngineError::InvalidInput)?;
        let mut providers = BTreeMap::new();
        for p in config.providers {
            validate(&p).map_err(EngineError::InvalidInput)?;
            providers.insert(p.name.clone(), p);
        }
        let from_config = providers.keys().cloned().collect();
        for p in store.providers().await? {
            providers.insert(p.name.clone(), p);
        }
        providers.values().for_each(hide_key_env);
        let default_model = store
            .setting(DEFAULT_MODEL_SETTING)
            .await?
            .or(config.default_model)
            .filter(|m| !m.trim().is_empty());
        Ok(Self {
            store,
            catalog,
            retry: config.retry,
            from_config,
            state: RwLock::new(State {
                providers,
                default_model,
            }),
            clients: Mutex::new(HashMap::new()),
            writes: tokio::sync::Mutex::new(()),
        })
    }

    /// The catalog, with the configuration's overrides.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// True when no provider is defined.
    pub fn is_empty(&self) -> bool {
        self.read().providers.is_empty()
    }

    /// Every provider, by name, with literal keys masked.
    pub fn list(&self) -> Vec<ProviderConfig> {
        self.read()
            .providers
            .values()
            .map(ProviderConfig::masked)
            .collect()
    }

    /// One provider, its literal key masked.
    pub fn get(&self, name: &str) -> Result<ProviderConfig, EngineError> {
        self.read()
            .providers
            .get(name)
            .map(ProviderConfig::masked)
            .ok_or_else(|| not_found(name))
    }

    /// Every provider, by name, with literal keys as stored (keys taken
    /// from the environment are never filled in).
    pub fn list_revealed(&self) -> Vec<ProviderConfig> {
        self.read().providers.values().cloned().collect()
    }

    /// One provider, its literal key as stored.
    pub fn get_revealed(&self, name: &str) -> Result<ProviderConfig, EngineError> {
        self.read()
            .providers
            .get(name)
            .cloned()
            .ok_or_else(|| not_found(name))
    }

    /// Adds a provider (persisted); refused if the name is taken. Returns it masked.
    pub async fn add(&self, provider: ProviderConfig) -> Result<ProviderConfig, EngineError> {
        validate(&provider).map_err(EngineError::InvalidInput)?;
        let _writes = self.writes.lock().await;
        if self.read().providers.contains_key(&provider.name) {
            return Err(EngineError::InvalidInput(format!(
                "provider `{}` already exists; update it instead",
                provider.name
            )));
        }
        self.store.put_provider(&provider).await?;
        Ok(self.install(provider))
    }

    /// Replaces a provider (persisted). A key equal to the current key's
    /// mask (a listed provider sent back unchanged) keeps the current key.
    pub async fn update(
        &self,
        mut provider: ProviderConfig,
    ) -> Result<ProviderConfig, EngineError> {
        validate(&provider).map_err(EngineError::InvalidInput)?;
        let _writes = self.writes.lock().await;
        let current = self
            .read()
            .providers
            .get(&provider.name)
            .cloned()
            .ok_or_else(|| not_found(&provider.name))?;
        if provider.api_key.is_some() && provider.api_key == current.masked().api_key {
            provider.api_key = current.api_key;
        }
        self.store.put_provider(&provider).await?;
        Ok(self.install(provider))
    }

    /// Removes a provider added through the API.
    pub async fn remove(&self, name: &str) -> Result<(), EngineError> {
        let _writes = self.writes.lock().await;
        if !self.read().providers.contains_key(name) {
            return Err(not_found(name));
        }
        if self.from_config.contains(name) {
            return Err(EngineError::InvalidInput(format!(
                "provider `{name}` is defined in the configuration file; remove it there"
            )));
        }
        self.store.delete_provider(name).await?;
        self.write().providers.remove(name);
        self.forget_client(name);
        Ok(())
    }

    /// Sets the default model (persisted); refused unless a provider serves it
    /// (named as `provider/model`, listing it, or of its catalog kind).
    pub async fn set_default_model(&self, model: &str) -> Result<(), EngineError> {
        let model = model.trim();
        if model.is_empty() {
            return Err(EngineError::InvalidInput(
                "the model id is empty".to_owned(),
            ));
        }
        let _writes = self.writes.lock().await;
        // On its own: a default must not lean on the previous default.
        self.route(&self.read(), model, false)
            .map_err(EngineError::InvalidInput)?;
        self.store.put_setting(DEFAULT_MODEL_SETTING, model).await?;
        self.write().default_model = Some(model.to_owned());
        Ok(())
    }

    /// The retry policy of every client the registry builds.
    pub fn retry(&self) -> RetryPolicy {
        self.retry
    }

    /// The default model, if one is configured or set.
    pub fn default_model(&self) -> Option<String> {
        self.read().default_model.clone()
    }

    /// The provider that serves `model` and the id to ask it for, without
    /// building a client.
    pub fn route_of(&self, model: &str) -> Result<(ProviderConfig, String), String> {
        self.route(&self.read(), model, true)
            .map(|(p, id)| (p.masked(), id))
    }

    fn install(&self, provider: ProviderConfig) -> ProviderConfig {
        hide_key_env(&provider);
        let masked = provider.masked();
        let name = provider.name.clone();
        self.write().providers.insert(name.clone(), provider);
        self.forget_client(&name);
        masked
    }

    fn forget_client(&self, name: &str) {
        self.clients
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
    }

    // A panicking holder cannot leave `State` half-changed (each change is
    // one map operation), so a poisoned lock's data is still good.
    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Finds the provider for `model`: `provider/model` with a known
    /// provider; else a provider listing the model; else one of the kind the
    /// catalog gives for it (that kind first, then the same vendor's other
    /// API); else, if `use_default`, the default model's provider.
    fn route(
        &self,
        state: &State,
        model: &str,
        use_default: bool,
    ) -> Result<(ProviderConfig, String), String> {
        if let Some((name, id)) = model.split_once('/')
            && !id.is_empty()
            && let Some(p) = state.providers.get(name)
        {
            return Ok((p.clone(), id.to_owned()));
        }
        if let Some(p) = self.serving(state, model) {
            return Ok((p.clone(), model.to_owned()));
        }
        if use_default
            && let Some(default) = state.default_model.as_deref().filter(|d| *d != model)
            && let Ok((p, _)) = self.route(state, default, false)
        {
            return Ok((p, model.to_owned()));
        }
        let names: Vec<&str> = state.providers.keys().map(String::as_str).collect();
        if names.is_empty() {
            return Err(format!(
                "no provider serves model `{model}`: no provider is configured"
            ));
        }
        let known = names.join(", ");
        match model.split_once('/') {
            Some((name, _)) => Err(format!(
                "unknown provider `{name}` in model `{model}` (providers: {known})"
            )),
            None => Err(format!(
                "no provider serves model `{model}`; name one as PROVIDER/{model} (providers: {known})"
            )),
        }
    }

    fn serving<'a>(&self, state: &'a State, model: &str) -> Option<&'a ProviderConfig> {
        let all = || state.providers.values();
        if let Some(p) = all().find(|p| p.models.iter().any(|m| m == model)) {
            return Some(p);
        }
        let kind = self.catalog.provider_of(model)?;
        all()
            .find(|p| p.kind == kind)
            .or_else(|| all().find(|p| p.kind.same_vendor(kind)))
    }

    /// The (cached) client of a provider; fails naming a missing key variable.
    fn client(&self, p: &ProviderConfig) -> Result<Arc<dyn ModelClient>, String> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(&p.name) {
            return Ok(client.clone());
        }
        let api_key = match (&p.api_key, p.key_env()) {
            (Some(key), _) => Some(key.clone()),
            (None, Some(var)) => Some(
                std::env::var(var)
                    .ok()
                    .filter(|k| !k.trim().is_empty())
                    .ok_or_else(|| {
                        format!(
                            "provider `{}` needs an API key: set the environment variable {var}",
                            p.name
                        )
                    })?,
            ),
            (None, None) => None,
        };
        let config = ClientConfig {
            base_url: p.base_url_or_default().to_owned(),
            api_key,
            retry: self.retry,
            extra_headers: p
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            tool_choice: p.tool_choice.clone(),
            stream: p.stream,
        };
        let client =
            client_for(p.kind, config).map_err(|e| format!("provider `{}`: {e}", p.name))?;
        clients.insert(p.name.clone(), client.clone());
        Ok(client)
    }
}

impl ModelResolver for Providers {
    fn resolve(&self, model: &str) -> Result<Arc<dyn ModelClient>, String> {
        let (provider, id) = self.route(&self.read(), model, true)?;
        let inner = self.client(&provider)?;
        let reasoning = self.catalog.get(&id).is_some_and(|m| m.reasoning);
        Ok(Arc::new(Routed {
            inner,
            model: id,
            reasoning,
        }))
    }

    fn model_info(&self, model: &str) -> Option<ModelInfo> {
        let id = match model.split_once('/') {
            Some((name, id)) if self.read().providers.contains_key(name) => id,
            _ => model,
        };
        self.catalog.get(id).cloned()
    }
}

/// A provider's client for one model: sends the provider's own model id
/// (without the `provider/` prefix) and drops the reasoning effort for models
/// that take none.
struct Routed {
    inner: Arc<dyn ModelClient>,
    model: String,
    reasoning: bool,
}

impl ModelClient for Routed {
    fn stream(&self, mut request: ModelRequest) -> ModelStream {
        request.model.clone_from(&self.model);
        if !self.reasoning {
            request.reasoning = None;
        }
        self.inner.stream(request)
    }
}

/// Keeps the variable `p`'s key is read from out of the agent's commands.
fn hide_key_env(p: &ProviderConfig) {
    if let Some(var) = p.key_env() {
        gantry_tools::sandbox::child_env::hide(var);
    }
}

pub(super) fn not_found(name: &str) -> EngineError {
    EngineError::NotFound {
        what: "provider",
        name: name.to_owned(),
    }
}

/// One line on what is wrong with a provider definition.
fn validate(p: &ProviderConfig) -> Result<(), String> {
    let name = &p.name;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(format!(
            "invalid provider name `{name}`: use letters, digits, `-`, `_` or `.`"
        ));
    }
    if let Some(url) = &p.base_url
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(format!(
            "provider `{name}`: base_url `{url}` must start with http:// or https://"
        ));
    }
    if p.api_key.is_some() && p.api_key_env.is_some() {
        return Err(format!(
            "provider `{name}`: set api_key or api_key_env, not both"
        ));
    }
    if p.api_key_env
        .as_deref()
        .is_some_and(|v| v.trim().is_empty())
    {
        return Err(format!("provider `{name}`: api_key_env is empty"));
    }
    Ok(())
}
