//! Model providers and the default model, over the engine's provider
//! registry. Literal API keys are masked in every answer (the engine masks
//! them), except to authenticated callers of a server started to reveal
//! them (`ServeOptions::reveal_provider_keys`: A3S's clients read back the
//! key they set); a masked key sent back unchanged keeps the stored key.
//!
//! The seed's `ProviderInfo` has no API kind. A new provider speaks
//! Anthropic Messages when its name or URL says Anthropic (`anthropic`,
//! `claude`), else OpenAI Chat Completions, which OpenAI and most
//! compatible servers (Ollama, vLLM, OpenRouter, DeepSeek, ...) speak. An
//! update keeps the provider's kind. Model details (cost, limits,
//! modalities, capabilities) a client sends are kept beside the provider
//! and read back as sent (`provider_models.rs`); a model sent by id alone
//! is described by the engine's models.dev-shaped catalog.

use gantry_core::EngineError;
use gantry_grpc::clip;
use gantry_llm::catalog::Catalog;
use gantry_types::{ProviderConfig, ProviderKind};
use tonic::Status;

use super::Ctx;
use super::provider_models::Described;
use crate::auth::Caller;
use crate::pb;
use crate::status::{required, status};
use crate::views::u32_of;

/// `ListProviders`: every provider by name, keys masked (unless revealed
/// to this caller), and the default model split into its provider and
/// model id.
pub(crate) async fn list_providers(
    ctx: &Ctx,
    _req: pb::ListProvidersRequest,
    caller: Caller,
) -> Result<pb::ListProvidersResponse, Status> {
    let catalog = ctx.catalog();
    let listed = if ctx.reveals_keys_to(caller) {
        ctx.engine.providers().list_revealed()
    } else {
        ctx.engine.providers().list()
    };
    let described = Described::load(ctx).await?;
    let providers = listed
        .iter()
        .map(|p| provider_info(catalog, &described, p))
        .collect();
    let (default_provider, default_model) =
        split_model(ctx, &ctx.engine.providers().default_model());
    Ok(pb::ListProvidersResponse {
        providers,
        default_provider,
        default_model: Some(default_model),
    })
}

/// `GetProvider`: one provider by name, its key masked (unless revealed
/// to this caller).
pub(crate) async fn get_provider(
    ctx: &Ctx,
    req: pb::GetProviderRequest,
    caller: Caller,
) -> Result<pb::GetProviderResponse, Status> {
    let name = required("name", &req.name)?;
    let providers = ctx.engine.providers();
    let provider = if ctx.reveals_keys_to(caller) {
        providers.get_revealed(name)
    } else {
        providers.get(name)
    }
    .map_err(status)?;
    let described = Described::load(ctx).await?;
    Ok(pb::GetProviderResponse {
        provider: Some(provider_info(ctx.catalog(), &described, &provider)),
    })
}

/// `AddProvider`: a new provider (persisted), of the kind its name or URL
/// suggests, with the models it lists. `ALREADY_EXISTS` if the name is taken.
pub(crate) async fn add_provider(
    ctx: &Ctx,
    req: pb::AddProviderRequest,
) -> Result<pb::AddProviderResponse, Status> {
    let info = req
        .provider
        .ok_or_else(|| Status::invalid_argument("provider: required"))?;
    let name = provider_name(&info.name)?;
    if ctx.engine.providers().get(name).is_ok() {
        return Err(Status::already_exists(format!(
            "provider `{name}` already exists; update it instead",
            name = clip(name)
        )));
    }
    let base_url = base_url(info.base_url.as_deref())?;
    let mut config = ProviderConfig::new(name, kind_of(name, base_url.as_deref()));
    config.base_url = base_url;
    config.api_key = info.api_key.filter(|k| !k.trim().is_empty());
    config.models = model_ids(&info.models, &config)?;
    let added = ctx
        .engine
        .providers()
        .add(config)
        .await
        .map_err(provider_error)?;
    Described::keep(ctx, name, Some(&info.models)).await?;
    let described = Described::load(ctx).await?;
    Ok(pb::AddProviderResponse {
        success: true,
        error: String::new(),
        provider: Some(provider_info(ctx.catalog(), &described, &added)),
    })
}

/// `UpdateProvider`: changes the provider the name identifies (persisted).
/// Fields left out stay: an absent `api_key` or `base_url`, or no models.
/// An empty `api_key` removes the literal key (the vendor's environment
/// variable is read again), an empty `base_url` goes back to the kind's
/// endpoint; listed models replace the provider's list.
pub(crate) async fn update_provider(
    ctx: &Ctx,
    req: pb::UpdateProviderRequest,
) -> Result<pb::UpdateProviderResponse, Status> {
    let info = req
        .provider
        .ok_or_else(|| Status::invalid_argument("provider: required"))?;
    let name = required("provider.name", &info.name)?;
    // The current definition, its key masked: sent back as it is, the
    // engine keeps the stored key.
    let mut config = ctx.engine.providers().get(name).map_err(status)?;
    if info.base_url.is_some() {
        config.base_url = base_url(info.base_url.as_deref())?;
    }
    match info.api_key {
        Some(key) if key.trim().is_empty() => config.api_key = None,
        Some(key) => {
            // A literal key replaces a key variable (the engine takes one).
            config.api_key = Some(key);
            config.api_key_env = None;
        }
        None => {}
    }
    if !info.models.is_empty() {
        config.models = model_ids(&info.models, &config)?;
    }
    let updated = ctx
        .engine
        .providers()
        .update(config)
        .await
        .map_err(provider_error)?;
    if !info.models.is_empty() {
        Described::keep(ctx, name, Some(&info.models)).await?;
    }
    let described = Described::load(ctx).await?;
    Ok(pb::UpdateProviderResponse {
        success: true,
        error: String::new(),
        provider: Some(provider_info(ctx.catalog(), &described, &updated)),
    })
}

/// `RemoveProvider`: removes a provider added through the API.
/// `FAILED_PRECONDITION` for one defined in the configuration file (it
/// would come back at the next start) and for the one the default model
/// names (new sessions would have no model): set another default first.
pub(crate) async fn remove_provider(
    ctx: &Ctx,
    req: pb::RemoveProviderRequest,
) -> Result<pb::RemoveProviderResponse, Status> {
    let name = required("name", &req.name)?;
    ctx.engine.providers().get(name).map_err(status)?;
    let default = ctx.engine.providers().default_model();
    if default
        .split_once('/')
        .is_some_and(|(provider, _)| provider == name)
    {
        return Err(Status::failed_precondition(format!(
            "provider `{name}` serves the default model `{default}`; set another default model first",
            name = clip(name)
        )));
    }
    ctx.engine
        .providers()
        .remove(name)
        .await
        .map_err(|e| match e {
            // The engine's only refusal of a known provider: it comes from
            // the configuration file.
            EngineError::InvalidInput(message) => Status::failed_precondition(message),
            other => status(other),
        })?;
    Described::keep(ctx, name, None).await?;
    Ok(pb::RemoveProviderResponse {
        success: true,
        error: String::new(),
    })
}

/// `SetDefaultModel`: the model new sessions get when they name none
/// (persisted), as `provider/model`, or the bare model id when no provider
/// is given (any provider serving it then). `NOT_FOUND` for an unknown
/// provider, `INVALID_ARGUMENT` for a model no provider serves.
pub(crate) async fn set_default_model(
    ctx: &Ctx,
    req: pb::SetDefaultModelRequest,
) -> Result<pb::SetDefaultModelResponse, Status> {
    let model = required("model", &req.model)?;
    let full = match req.provider.trim() {
        "" => model.to_owned(),
        provider => {
            ctx.engine.providers().get(provider).map_err(status)?;
            format!("{provider}/{model}")
        }
    };
    ctx.engine
        .providers()
        .set_default_model(&full)
        .await
        .map_err(|e| match e {
            EngineError::InvalidInput(message) => {
                Status::invalid_argument(format!("model: {message}"))
            }
            other => status(other),
        })?;
    let (provider, model) = split_model(ctx, &full);
    Ok(pb::SetDefaultModelResponse {
        success: true,
        error: String::new(),
        provider: provider.unwrap_or_default(),
        model,
    })
}

/// `GetDefaultModel`: the model new sessions get when they name none, and
/// the provider that serves it (absent when none does).
pub(crate) async fn get_default_model(
    ctx: &Ctx,
    _req: pb::GetDefaultModelRequest,
) -> Result<pb::GetDefaultModelResponse, Status> {
    let (provider, model) = split_model(ctx, &ctx.engine.providers().default_model());
    Ok(pb::GetDefaultModelResponse {
        provider,
        model: Some(model),
    })
}

/// A model as (provider, model id): the provider it names or the one that
/// would serve it, and the id that provider is asked for; the model as it
/// is, with no provider, when none serves it.
fn split_model(ctx: &Ctx, model: &str) -> (Option<String>, String) {
    match ctx.engine.providers().route_of(model) {
        Some((provider, id)) => (Some(provider.name), id),
        None => (None, model.to_owned()),
    }
}

/// A provider as the seed shows it: its masked key, the URL it is reached
/// at, and its models as its client described them, else with what the
/// catalog knows about them.
fn provider_info(catalog: &Catalog, described: &Described, p: &ProviderConfig) -> pb::ProviderInfo {
    pb::ProviderInfo {
        name: p.name.clone(),
        api_key: p.api_key.clone(),
        base_url: Some(p.base_url_or_default().to_owned()),
        models: served_models(catalog, p)
            .iter()
            .map(|id| {
                described
                    .model(&p.name, id)
                    .unwrap_or_else(|| model_info(catalog, id))
            })
            .collect(),
    }
}

/// The models a provider serves: those it lists; else, on its vendor's own
/// endpoint, the catalog's models of that vendor (the engine routes them
/// there); else none known.
fn served_models(catalog: &Catalog, p: &ProviderConfig) -> Vec<String> {
    if !p.models.is_empty() {
        return p.models.clone();
    }
    if p.base_url_or_default() != p.kind.default_base_url() {
        return Vec::new();
    }
    catalog
        .entries()
        .filter(|(id, _)| {
            catalog
                .provider_of(id)
                .is_some_and(|kind| kind.same_vendor(p.kind))
        })
        .map(|(id, _)| id.to_owned())
        .collect()
}

/// One model: the catalog's entry, or only its id when the catalog does
/// not know it.
fn model_info(catalog: &Catalog, id: &str) -> pb::ModelInfo {
    let Some(info) = catalog.get(id) else {
        return pb::ModelInfo {
            id: id.to_owned(),
            name: id.to_owned(),
            ..pb::ModelInfo::default()
        };
    };
    let name = if info.name.is_empty() { id } else { &info.name };
    pb::ModelInfo {
        id: id.to_owned(),
        name: name.to_owned(),
        family: info.family.clone(),
        // Per-model credentials do not exist in the engine.
        api_key: None,
        base_url: None,
        attachment: info.attachment,
        reasoning: info.reasoning,
        tool_call: info.tool_call,
        temperature: info.temperature,
        release_date: (!info.release_date.is_empty()).then(|| info.release_date.clone()),
        modalities: Some(pb::ModelModalitiesInfo {
            input: info.modalities.input.clone(),
            output: info.modalities.output.clone(),
        }),
        cost: Some(pb::ModelCostInfo {
            input: info.cost.input,
            output: info.cost.output,
            cache_read: info.cost.cache_read,
            cache_write: info.cost.cache_write,
        }),
        limit: Some(pb::ModelLimitInfo {
            context: u32_of(info.limit.context),
            output: u32_of(info.limit.output),
        }),
    }
}

/// The API a new provider speaks (see the module doc).
fn kind_of(name: &str, base_url: Option<&str>) -> ProviderKind {
    let name = name.to_ascii_lowercase();
    let url = base_url.unwrap_or_default().to_ascii_lowercase();
    if name.contains("anthropic") || name.contains("claude") || url.contains("anthropic") {
        ProviderKind::Anthropic
    } else {
        ProviderKind::OpenaiChat
    }
}

/// A new provider's name: it becomes the `provider` of `provider/model`
/// ids, so letters, digits, `-`, `_` and `.` only.
fn provider_name(name: &str) -> Result<&str, Status> {
    let name = required("provider.name", name)?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(Status::invalid_argument(format!(
            "provider.name: `{name}` is invalid: use letters, digits, `-`, `_` or `.`",
            name = clip(name)
        )));
    }
    Ok(name)
}

/// A base URL: none when empty, else an http(s) URL.
fn base_url(url: Option<&str>) -> Result<Option<String>, Status> {
    let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(Status::invalid_argument(format!(
            "provider.base_url: `{url}` must start with http:// or https://",
            url = clip(url)
        )));
    }
    Ok(Some(url.to_owned()))
}

/// The model ids of `models`, once each. A model's own key or URL is
/// refused unless it is the provider's: the engine has per-provider
/// credentials only (add another provider for such a model).
fn model_ids(models: &[pb::ModelInfo], provider: &ProviderConfig) -> Result<Vec<String>, Status> {
    let mut ids: Vec<String> = Vec::new();
    for (i, m) in models.iter().enumerate() {
        let id = required(&format!("provider.models[{i}].id"), &m.id)?;
        let own_key = m.api_key.as_deref().filter(|k| !k.trim().is_empty());
        if own_key.is_some() && own_key != provider.api_key.as_deref() {
            return Err(Status::invalid_argument(format!(
                "provider.models[{i}].api_key: per-model keys are not supported; add a separate provider for `{id}`",
                id = clip(id)
            )));
        }
        let own_url = m
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty());
        if own_url.is_some_and(|u| u != provider.base_url_or_default()) {
            return Err(Status::invalid_argument(format!(
                "provider.models[{i}].base_url: per-model URLs are not supported; add a separate provider for `{id}`",
                id = clip(id)
            )));
        }
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_owned());
        }
    }
    Ok(ids)
}

/// An engine refusal of a provider definition names the provider field.
fn provider_error(error: EngineError) -> Status {
    match error {
        EngineError::InvalidInput(message) => {
            Status::invalid_argument(format!("provider: {message}"))
        }
        other => status(other),
    }
}
