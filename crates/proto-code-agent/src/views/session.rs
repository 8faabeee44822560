//! Threads as `Session`s, and `SessionConfig`/`LLMConfig` as thread settings.

use gantry_core::Engine;
use gantry_grpc::clip;
use gantry_types::{
    ItemKind, ModelEndpoint, ProviderKind, Thread, ThreadSettingsPatch, ThreadStatus, ThreadView,
};
use tonic::Status;

use super::u32_of;
use crate::pb;

/// Thread metadata keys for `SessionConfig` fields the engine does not use.
pub(crate) mod keys {
    /// `LLMConfig.provider` as the client named it.
    pub(crate) const PROVIDER: &str = "a3s.provider";
    /// `SessionConfig.max_context_length`.
    pub(crate) const MAX_CONTEXT: &str = "a3s.max_context_length";
    /// `SessionConfig.auto_compact`.
    pub(crate) const AUTO_COMPACT: &str = "a3s.auto_compact";
    /// `SessionConfig.storage_type`.
    pub(crate) const STORAGE: &str = "a3s.storage_type";
    /// `SessionConfig.auto_compact_threshold` (newer A3S).
    pub(crate) const COMPACT_THRESHOLD: &str = "a3s.auto_compact_threshold";
    /// `SessionConfig.planning_enabled` (newer A3S).
    pub(crate) const PLANNING: &str = "a3s.planning_enabled";
    /// `SessionConfig.goal_tracking` (newer A3S).
    pub(crate) const GOAL_TRACKING: &str = "a3s.goal_tracking";
}

/// The session of `view`, with its context usage.
pub(crate) fn session(engine: &Engine, view: &ThreadView) -> pb::Session {
    let thread = &view.thread;
    pb::Session {
        session_id: thread.id.to_string(),
        config: Some(config(engine, thread)),
        state: state(thread).into(),
        context_usage: Some(context_usage(engine, view)),
        created_at: thread.created_at,
        updated_at: thread.updated_at,
    }
}

/// The session's context: estimated tokens of the next request, the
/// tokens used so far, and the user and agent messages.
pub(crate) fn context_usage(engine: &Engine, view: &ThreadView) -> pb::ContextUsage {
    let thread = &view.thread;
    let message_count = view
        .turns
        .iter()
        .flat_map(|t| &t.items)
        .filter(|i| {
            matches!(
                i.kind,
                ItemKind::UserMessage { .. } | ItemKind::AgentMessage { .. }
            )
        })
        .count();
    pb::ContextUsage {
        total_tokens: u32_of(engine.turns().context_usage_of(view).used),
        prompt_tokens: u32_of(thread.usage.input_tokens),
        completion_tokens: u32_of(thread.usage.output_tokens),
        message_count: u32_of(message_count),
    }
}

/// The session's state: destroyed sessions are completed.
pub(crate) fn state(thread: &Thread) -> pb::SessionState {
    if thread.archived {
        pb::SessionState::Completed
    } else if thread.paused {
        pb::SessionState::Paused
    } else if thread.status == ThreadStatus::Failed {
        pb::SessionState::Error
    } else {
        pb::SessionState::Active
    }
}

/// The thread's settings as a `SessionConfig`; the API key is never sent back.
fn config(engine: &Engine, thread: &Thread) -> pb::SessionConfig {
    let meta = &thread.metadata;
    let provider = meta
        .get(keys::PROVIDER)
        .cloned()
        .unwrap_or_else(|| match &thread.endpoint {
            Some(e) => e.kind.as_str().to_owned(),
            None => engine
                .providers()
                .route_of(&thread.model)
                .map(|(p, _)| p.name)
                .unwrap_or_default(),
        });
    let (model, base_url) = match &thread.endpoint {
        Some(e) => (thread.model.clone(), e.base_url.clone().unwrap_or_default()),
        // A routed model is `provider/model`: the client named them apart.
        None => match thread.model.split_once('/') {
            Some((p, m)) if p == provider => (m.to_owned(), String::new()),
            _ => (thread.model.clone(), String::new()),
        },
    };
    pb::SessionConfig {
        name: thread.name.clone().unwrap_or_default(),
        workspace: thread.cwd.clone(),
        llm: Some(pb::LlmConfig {
            provider,
            model,
            api_key: String::new(),
            base_url,
            temperature: thread.temperature.unwrap_or_default(),
            max_tokens: thread.max_output_tokens.unwrap_or_default(),
        }),
        system_prompt: thread.instructions.clone().unwrap_or_default(),
        max_context_length: meta
            .get(keys::MAX_CONTEXT)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
        auto_compact: meta.get(keys::AUTO_COMPACT).is_none_or(|v| v == "true"),
        storage_type: meta
            .get(keys::STORAGE)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
        auto_compact_threshold: meta
            .get(keys::COMPACT_THRESHOLD)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default(),
        planning_enabled: meta.get(keys::PLANNING).is_some_and(|v| v == "true"),
        goal_tracking: meta.get(keys::GOAL_TRACKING).is_some_and(|v| v == "true"),
    }
}

/// The change a `SessionConfig` asks for: its non-empty fields (proto3
/// cannot tell an empty field from an absent one, so empty means
/// "unchanged"). `engine` tells configured providers from model servers.
pub(crate) fn config_patch(
    engine: &Engine,
    config: &pb::SessionConfig,
) -> Result<ThreadSettingsPatch, Status> {
    let mut patch = ThreadSettingsPatch::default();
    if !config.name.trim().is_empty() {
        patch.name = Some(Some(config.name.trim().to_owned()));
    }
    if !config.system_prompt.trim().is_empty() {
        patch.instructions = Some(Some(config.system_prompt.clone()));
    }
    if let Some(llm) = &config.llm {
        llm_patch(engine, llm, &mut patch)?;
    }
    let meta = &mut patch.metadata;
    if config.max_context_length > 0 {
        meta.insert(
            keys::MAX_CONTEXT.to_owned(),
            Some(config.max_context_length.to_string()),
        );
    }
    if config.auto_compact {
        meta.insert(keys::AUTO_COMPACT.to_owned(), Some("true".to_owned()));
    }
    if config.auto_compact_threshold.is_finite() && config.auto_compact_threshold > 0.0 {
        meta.insert(
            keys::COMPACT_THRESHOLD.to_owned(),
            Some(config.auto_compact_threshold.to_string()),
        );
    }
    for (on, key) in [
        (config.planning_enabled, keys::PLANNING),
        (config.goal_tracking, keys::GOAL_TRACKING),
    ] {
        if on {
            meta.insert(key.to_owned(), Some("true".to_owned()));
        }
    }
    if config.storage_type != 0 {
        meta.insert(
            keys::STORAGE.to_owned(),
            Some(config.storage_type.to_string()),
        );
    }
    Ok(patch)
}

/// An `LLMConfig` as settings: a provider the engine has configured (and no
/// key or URL of the client's own) routes through it; otherwise the session
/// gets its own model server: `anthropic`/`claude` speak Anthropic
/// Messages, `openai-responses` OpenAI Responses, anything else an
/// OpenAI-compatible Chat Completions API.
fn llm_patch(
    engine: &Engine,
    llm: &pb::LlmConfig,
    patch: &mut ThreadSettingsPatch,
) -> Result<(), Status> {
    let provider = llm.provider.trim();
    let model = llm.model.trim();
    if provider.is_empty() && model.is_empty() {
        return Ok(());
    }
    if model.is_empty() {
        return Err(Status::invalid_argument("llm.model: required"));
    }
    let own_server = !llm.api_key.trim().is_empty() || !llm.base_url.trim().is_empty();
    let configured = !provider.is_empty() && engine.providers().get(provider).is_ok();
    if configured && !own_server {
        patch.model = Some(format!("{provider}/{model}"));
        patch.endpoint = Some(None);
    } else {
        let kind = match provider.to_ascii_lowercase().as_str() {
            "anthropic" | "claude" => ProviderKind::Anthropic,
            "openai-responses" => ProviderKind::OpenaiResponses,
            _ => ProviderKind::OpenaiChat,
        };
        let base_url = llm.base_url.trim();
        let http = base_url.starts_with("http://") || base_url.starts_with("https://");
        if !base_url.is_empty() && !http {
            return Err(Status::invalid_argument(format!(
                "llm.base_url: `{base_url}` must start with http:// or https://",
                base_url = clip(base_url)
            )));
        }
        patch.model = Some(model.to_owned());
        patch.endpoint = Some(Some(ModelEndpoint {
            kind,
            base_url: (!base_url.is_empty()).then(|| base_url.to_owned()),
            api_key: Some(llm.api_key.trim().to_owned()).filter(|k| !k.is_empty()),
        }));
    }
    if !provider.is_empty() {
        patch
            .metadata
            .insert(keys::PROVIDER.to_owned(), Some(provider.to_owned()));
    }
    if llm.temperature.is_finite() && llm.temperature > 0.0 {
        patch.temperature = Some(Some(llm.temperature));
    }
    if llm.max_tokens > 0 {
        patch.max_output_tokens = Some(Some(llm.max_tokens));
    }
    Ok(())
}
