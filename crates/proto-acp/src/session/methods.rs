//! The methods and notifications, each onto the engine. Params are
//! checked by their types (`-32602` with serde's message); a method of a
//! session this connection did not open or load is `-32002`.

use std::sync::Arc;

use gantry_types::ThreadId;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::modes::Mode;
use super::{Agent, config, engine_error, lifecycle, prompt};
use crate::rpc::RpcError;
use crate::wire::{
    CancelNotification, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest,
};

fn parse<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    let params = if params.is_null() { json!({}) } else { params };
    serde_json::from_value(params)
        .map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

fn value<T: Serialize>(v: T) -> Result<Value, RpcError> {
    serde_json::to_value(v).map_err(|e| RpcError::internal(e.to_string()))
}

/// Answers a request.
pub(crate) async fn call(
    agent: &Arc<Agent>,
    method: &str,
    params: Value,
) -> Result<Value, RpcError> {
    match method {
        "initialize" => value(lifecycle::initialize(agent, parse(params)?)),
        // Nothing to check: the agent uses the providers Gantry is
        // configured with (the one method of `initialize` says so).
        "authenticate" => Ok(json!({})),
        "session/new" => value(lifecycle::new_session(agent, parse(params)?).await?),
        "session/load" => value(lifecycle::load_session(agent, parse(params)?).await?),
        "session/list" => value(lifecycle::list_sessions(agent, parse(params)?).await?),
        "session/set_mode" => {
            let req: SetSessionModeRequest = parse(params)?;
            let session = agent.session(&req.session_id)?;
            let mode = Mode::parse(&req.mode_id).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "unknown mode `{}`: expected ask, accept-edits, full-auto or read-only",
                    req.mode_id
                ))
            })?;
            let view = agent
                .engine
                .threads()
                .read(&session.id)
                .await
                .map_err(engine_error)?;
            let mut policy = mode.policy(&view.thread.policy, agent.options.sandbox);
            policy.user_input = super::elicit::user_input_policy(&agent.caps());
            agent
                .engine
                .safety()
                .set_policy(&session.id, policy)
                .await
                .map_err(engine_error)?;
            session.set_mode(mode);
            Ok(json!({}))
        }
        "session/set_config_option" => {
            let req: SetSessionConfigOptionRequest = parse(params)?;
            let session = agent.session(&req.session_id)?;
            let view = agent
                .engine
                .threads()
                .read(&session.id)
                .await
                .map_err(engine_error)?;
            let thread =
                config::set(&agent.engine, &view.thread, &req.config_id, &req.value).await?;
            value(SetSessionConfigOptionResponse {
                config_options: config::options(&agent.engine, &thread),
            })
        }
        "session/prompt" => value(prompt::prompt(agent, parse(params)?).await?),
        _ => Err(RpcError::method_not_found(method)),
    }
}

/// Handles a notification (never answered).
pub(crate) async fn notified(agent: &Arc<Agent>, method: &str, params: Value) {
    match method {
        "session/cancel" => {
            let Ok(req) = parse::<CancelNotification>(params) else {
                tracing::warn!("session/cancel without a sessionId");
                return;
            };
            if agent.session(&req.session_id).is_err() {
                tracing::warn!(
                    session = req.session_id,
                    "session/cancel of an unknown session"
                );
                return;
            }
            // Interrupting kills the running commands' process groups; the
            // prompt then answers `cancelled`.
            if let Err(e) = agent
                .engine
                .turns()
                .interrupt(&ThreadId(req.session_id))
                .await
            {
                tracing::warn!(error = %e, "cannot cancel the turn");
            }
        }
        // Extension notifications Gantry does not know are ignored, as ACP asks.
        m if m.starts_with('_') => {}
        m => tracing::debug!(method = m, "unknown notification ignored"),
    }
}
