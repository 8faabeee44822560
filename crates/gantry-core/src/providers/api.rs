//! The providers sub-handle: what clients may do with providers and the
//! default model, keys masked in every answer.

use std::sync::Arc;

use gantry_llm::catalog::Catalog;
use gantry_types::ProviderConfig;

use super::{Providers, not_found};
use crate::{Engine, EngineError};

/// Model providers, the default model and the model catalog (the gRPC
/// `ListProviders`, `AddProvider`, ... map onto these). Keys are masked in
/// every answer. Get one from [`Engine::providers`].
#[derive(Clone, Copy)]
pub struct ModelProviders<'e> {
    pub(crate) engine: &'e Engine,
}

impl<'e> ModelProviders<'e> {
    /// Every provider, by name, keys masked.
    pub fn list(self) -> Vec<ProviderConfig> {
        self.engine
            .provider_registry()
            .map(|p| p.list())
            .unwrap_or_default()
    }

    /// Whether the engine has no provider configured (it may still have a
    /// single model client).
    pub fn is_empty(self) -> bool {
        self.engine.provider_registry().is_none_or(|p| p.is_empty())
    }

    /// One provider, its key masked.
    pub fn get(self, name: &str) -> Result<ProviderConfig, EngineError> {
        self.engine
            .provider_registry()
            .ok_or_else(|| not_found(name))?
            .get(name)
    }

    /// Every provider, by name, with its literal key as stored: for an
    /// adapter whose authenticated clients may read keys back (keys taken
    /// from the environment are never filled in).
    pub fn list_revealed(self) -> Vec<ProviderConfig> {
        self.engine
            .provider_registry()
            .map(|p| p.list_revealed())
            .unwrap_or_default()
    }

    /// One provider with its literal key as stored (see [`Self::list_revealed`]).
    pub fn get_revealed(self, name: &str) -> Result<ProviderConfig, EngineError> {
        self.engine
            .provider_registry()
            .ok_or_else(|| not_found(name))?
            .get_revealed(name)
    }

    /// The provider that would serve `model` (masked) and the id it is
    /// asked for; `None` when no provider serves it.
    pub fn route_of(self, model: &str) -> Option<(ProviderConfig, String)> {
        self.engine.provider_registry()?.route_of(model).ok()
    }

    /// The model catalog (with the configuration's overrides), or the
    /// built-in one for an engine without a provider registry.
    pub fn catalog(self) -> &'e Catalog {
        match self.engine.provider_registry() {
            Some(providers) => providers.catalog(),
            None => Catalog::builtin(),
        }
    }

    /// Adds a provider (persisted); returns it masked.
    pub async fn add(self, provider: ProviderConfig) -> Result<ProviderConfig, EngineError> {
        self.registry()?.add(provider).await
    }

    /// Replaces a provider (persisted); returns it masked.
    pub async fn update(self, provider: ProviderConfig) -> Result<ProviderConfig, EngineError> {
        self.registry()?.update(provider).await
    }

    /// Removes a provider added through the API.
    pub async fn remove(self, name: &str) -> Result<(), EngineError> {
        self.registry()?.remove(name).await
    }

    /// Sets the model new threads get when they name none (persisted).
    pub async fn set_default_model(self, model: &str) -> Result<(), EngineError> {
        self.registry()?.set_default_model(model).await
    }

    /// What the catalog knows about `model` (reasoning, limits, prices).
    pub fn model_info(self, model: &str) -> Option<gantry_types::ModelInfo> {
        self.engine.shared.models.model_info(model)
    }

    /// Whether a thread could talk to `model`; a one-line reason if not
    /// (an unknown provider, no provider serving it).
    pub fn check_model(self, model: &str) -> Result<(), String> {
        self.engine.shared.models.resolve(model).map(|_| ())
    }

    /// The model new threads get when they name none.
    pub fn default_model(self) -> String {
        self.engine
            .provider_registry()
            .and_then(|p| p.default_model())
            .unwrap_or_else(|| self.engine.config().default_model.clone())
    }

    fn registry(self) -> Result<&'e Arc<Providers>, EngineError> {
        self.engine.provider_registry().ok_or_else(|| {
            EngineError::InvalidInput(
                "this engine has no provider registry (build it with EngineBuilder::providers)"
                    .to_owned(),
            )
        })
    }
}
