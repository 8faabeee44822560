//! What the runner offers at registration: the `gantry` agent SDK with the
//! models its providers serve and the reasoning levels each takes, ready
//! (a 0.7.0 control plane sends work only to a ready SDK; 0.2.0 has no
//! status).

use gantry_core::Engine;
use gantry_runner_protocol::messages::{AgentSdk, AgentSdkStatus, LlmModel, Registration};
use gantry_types::GANTRY_SDK;

/// Reasoning levels offered for a model that reasons.
const REASONING_LEVELS: [&str; 3] = ["low", "medium", "high"];

/// What this engine offers.
pub(crate) fn registration(engine: &Engine) -> Registration {
    let mut models: Vec<String> = engine
        .providers()
        .list()
        .iter()
        .flat_map(|p| p.models.iter().map(move |m| format!("{}/{m}", p.name)))
        .collect();
    let default = engine.providers().default_model();
    if !models.contains(&default) {
        models.insert(0, default);
    }
    let models = models
        .into_iter()
        .filter(|m| !m.is_empty())
        .map(|name| {
            let reasons = engine
                .providers()
                .model_info(&name)
                .is_some_and(|info| info.reasoning);
            LlmModel {
                reasoning: if reasons {
                    REASONING_LEVELS.iter().map(|l| (*l).to_owned()).collect()
                } else {
                    Vec::new()
                },
                name,
            }
        })
        .collect();
    Registration {
        agent_sdks: vec![AgentSdk {
            name: GANTRY_SDK.to_owned(),
            models,
            status: AgentSdkStatus::Ready as i32,
            error_message: None,
        }],
    }
}
