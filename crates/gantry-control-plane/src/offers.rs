//! What a runner offers: the agent SDKs and models of its registration
//! (and, in 0.7.0, of its SDK updates), kept as JSON in the store and shown
//! by the API. A 0.7.0 SDK says whether it is ready: only a ready one (or
//! a 0.2.0 one, which says nothing) gets work.

use gantry_runner_protocol::messages::{AgentSdk, AgentSdkStatus, Registration};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An agent SDK a runner runs, and its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SdkOffer {
    /// SDK name (e.g. `gantry`).
    pub name: String,
    /// Models it can run.
    pub models: Vec<ModelOffer>,
    /// 0.7.0: `ready`, `unconfigured` or `error` (absent: not said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// 0.7.0: why the SDK is in error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SdkOffer {
    /// Whether it may get work: ready, or of a runner that says nothing.
    pub(crate) fn usable(&self) -> bool {
        self.status.as_deref().is_none_or(|s| s == READY)
    }
}

/// An SDK's status that takes work.
const READY: &str = "ready";

/// A model, and the reasoning levels it supports (empty: default only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ModelOffer {
    /// Model name.
    pub name: String,
    /// Supported reasoning levels.
    pub reasoning: Vec<String>,
}

/// The offers of a (validated) registration.
pub(crate) fn from_registration(registration: &Registration) -> Vec<SdkOffer> {
    registration.agent_sdks.iter().map(from_sdk).collect()
}

/// The offer of one SDK.
pub(crate) fn from_sdk(sdk: &AgentSdk) -> SdkOffer {
    let status = match sdk.status() {
        AgentSdkStatus::Unspecified => None,
        AgentSdkStatus::Ready => Some(READY),
        AgentSdkStatus::Unconfigured => Some("unconfigured"),
        AgentSdkStatus::Error => Some("error"),
    };
    SdkOffer {
        name: sdk.name.clone(),
        models: sdk
            .models
            .iter()
            .map(|m| ModelOffer {
                name: m.name.clone(),
                reasoning: m.reasoning.clone(),
            })
            .collect(),
        status: status.map(str::to_owned),
        error: sdk.error_message.clone(),
    }
}

/// Whether `offers` include `sdk`, usable, and `model` under it when one
/// is asked for.
pub(crate) fn includes(offers: &[SdkOffer], sdk: &str, model: Option<&str>) -> bool {
    offers.iter().any(|offer| {
        offer.name == sdk
            && offer.usable()
            && model.is_none_or(|m| offer.models.iter().any(|o| o.name == m))
    })
}

/// Offers from their stored JSON; unreadable JSON reads as no offer.
pub(crate) fn parse(json: &str) -> Vec<SdkOffer> {
    serde_json::from_str(json).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "stored runner offers are unreadable; treating as none");
        Vec::new()
    })
}

/// Checks `model` (and `reasoning`, when given) against what a runner
/// offers under `sdk`: the field at fault and why, naming what is offered.
pub(crate) fn check_model(
    offers: &[SdkOffer],
    sdk: &str,
    model: &str,
    reasoning: Option<&str>,
) -> Result<(), (&'static str, String)> {
    let Some(offer) = offers.iter().find(|o| o.name == sdk) else {
        return Err(("model", format!("the runner does not offer sdk {sdk:?}")));
    };
    if !offer.usable() {
        let status = offer.status.as_deref().unwrap_or_default();
        let why = offer
            .error
            .as_deref()
            .map_or_else(String::new, |e| format!(": {e}"));
        return Err((
            "model",
            format!("sdk {sdk:?} is {status} on the runner{why}"),
        ));
    }
    let Some(found) = offer.models.iter().find(|m| m.name == model) else {
        let names: Vec<&str> = offer.models.iter().map(|m| m.name.as_str()).collect();
        return Err((
            "model",
            format!(
                "the runner does not offer model {model:?} (it offers {})",
                listed(&names)
            ),
        ));
    };
    if let Some(level) = reasoning
        && !found.reasoning.iter().any(|r| r == level)
    {
        let levels: Vec<&str> = found.reasoning.iter().map(String::as_str).collect();
        return Err((
            "reasoning_level",
            format!(
                "model {model:?} does not take reasoning level {level:?} (it takes {})",
                if levels.is_empty() {
                    "none: only its default".to_owned()
                } else {
                    listed(&levels)
                }
            ),
        ));
    }
    Ok(())
}

/// `"a", "b"`, or `nothing`.
fn listed(names: &[&str]) -> String {
    if names.is_empty() {
        return "nothing".to_owned();
    }
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offers() -> Vec<SdkOffer> {
        vec![SdkOffer {
            status: None,
            error: None,
            name: "gantry".into(),
            models: vec![
                ModelOffer {
                    name: "m1".into(),
                    reasoning: vec!["low".into(), "high".into()],
                },
                ModelOffer {
                    name: "plain".into(),
                    reasoning: Vec::new(),
                },
            ],
        }]
    }

    #[test]
    fn a_model_and_level_must_be_offered_under_the_sdk() {
        let offers = offers();
        assert!(check_model(&offers, "gantry", "m1", Some("high")).is_ok());
        assert!(check_model(&offers, "gantry", "plain", None).is_ok());
        let (field, why) = check_model(&offers, "gantry", "nope", None).unwrap_err();
        assert_eq!(field, "model");
        assert!(why.contains("\"nope\"") && why.contains("\"m1\""), "{why}");
        let (field, why) = check_model(&offers, "gantry", "m1", Some("ultra")).unwrap_err();
        assert_eq!(field, "reasoning_level");
        assert!(why.contains("\"low\", \"high\""), "{why}");
        let (field, _) = check_model(&offers, "gantry", "plain", Some("low")).unwrap_err();
        assert_eq!(field, "reasoning_level");
        let (field, _) = check_model(&offers, "codex", "m1", None).unwrap_err();
        assert_eq!(field, "model");
    }

    #[test]
    fn an_sdk_that_is_not_ready_gets_no_work() {
        let mut offers = offers();
        offers[0].status = Some("error".into());
        offers[0].error = Some("login expired".into());
        assert!(!includes(&offers, "gantry", Some("m1")));
        let (field, why) = check_model(&offers, "gantry", "m1", None).unwrap_err();
        assert_eq!(field, "model");
        assert!(
            why.contains("error") && why.contains("login expired"),
            "{why}"
        );
        offers[0].status = Some("ready".into());
        assert!(includes(&offers, "gantry", Some("m1")));
    }
}
