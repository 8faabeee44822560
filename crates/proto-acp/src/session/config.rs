//! The session's config options: the model (the thread's, the default
//! and the configured providers' models, a vendor provider's catalog
//! models) and the reasoning effort.

use gantry_core::Engine;
use gantry_types::{ProviderKind, Thread, ThreadSettingsPatch};
use serde_json::Value;

use crate::rpc::RpcError;
use crate::session::engine_error;
use crate::wire::{SessionConfigOption, SessionConfigSelectOption};

/// The reasoning efforts (`default`: the model's own).
const EFFORTS: [&str; 5] = ["default", "minimal", "low", "medium", "high"];

/// The options of `thread` as they are now.
pub(crate) fn options(engine: &Engine, thread: &Thread) -> Vec<SessionConfigOption> {
    let mut models = vec![thread.model.clone()];
    let providers = engine.providers();
    let default = providers.default_model();
    let catalog = providers.catalog();
    let configured = providers.list().into_iter().flat_map(|p| {
        let mut served: Vec<String> = p.models.clone();
        // A provider on its vendor's own endpoint that lists no models
        // serves the vendor's catalog models: offered too, so a client
        // (Harbor asks for `anthropic/claude-...`) finds the one it wants.
        if served.is_empty() && p.base_url.is_none() {
            let vendor = match p.kind {
                ProviderKind::Anthropic => "anthropic",
                ProviderKind::OpenaiChat | ProviderKind::OpenaiResponses => "openai",
            };
            served = catalog
                .entries()
                .filter(|(_, e)| e.provider == vendor)
                .map(|(id, _)| id.to_owned())
                .collect();
        }
        served
            .into_iter()
            .map(move |m| format!("{}/{m}", p.name))
            .collect::<Vec<_>>()
    });
    for model in std::iter::once(default).chain(configured) {
        if !models.contains(&model) {
            models.push(model);
        }
    }
    let select = |id: &str, name: &str, category: &str, current: String, values: Vec<String>| {
        SessionConfigOption {
            id: id.to_owned(),
            name: name.to_owned(),
            category: category.to_owned(),
            kind: "select",
            current_value: current,
            options: values
                .into_iter()
                .map(|v| SessionConfigSelectOption {
                    name: v.clone(),
                    value: v,
                })
                .collect(),
        }
    };
    vec![
        select("model", "Model", "model", thread.model.clone(), models),
        select(
            "reasoning",
            "Reasoning effort",
            "thought_level",
            thread
                .reasoning
                .clone()
                .unwrap_or_else(|| "default".to_owned()),
            EFFORTS.iter().map(|e| (*e).to_owned()).collect(),
        ),
    ]
}

/// Sets option `id` of `thread` to `value`; the thread as it is now.
pub(crate) async fn set(
    engine: &Engine,
    thread: &Thread,
    id: &str,
    value: &Value,
) -> Result<Thread, RpcError> {
    let Some(value) = value.as_str() else {
        return Err(RpcError::invalid_params(format!(
            "config option `{id}` takes a value id (a string)"
        )));
    };
    let patch = match id {
        "model" => {
            engine
                .providers()
                .check_model(value)
                .map_err(|e| RpcError::invalid_params(format!("model `{value}`: {e}")))?;
            ThreadSettingsPatch {
                model: Some(value.to_owned()),
                ..ThreadSettingsPatch::default()
            }
        }
        "reasoning" => {
            if !EFFORTS.contains(&value) {
                return Err(RpcError::invalid_params(format!(
                    "reasoning `{value}`: expected one of {}",
                    EFFORTS.join(", ")
                )));
            }
            ThreadSettingsPatch {
                reasoning: Some((value != "default").then(|| value.to_owned())),
                ..ThreadSettingsPatch::default()
            }
        }
        other => {
            return Err(RpcError::invalid_params(format!(
                "unknown config option `{other}`: expected model or reasoning"
            )));
        }
    };
    engine
        .threads()
        .configure(&thread.id, patch)
        .await
        .map_err(engine_error)
}
