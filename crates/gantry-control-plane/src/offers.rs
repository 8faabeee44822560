//! What a runner offers: the agent SDKs and models of its registration,
//! kept as JSON in the store and shown by the API.

use gantry_runner_protocol::v0_2 as pb;
use serde::{Deserialize, Serialize};

/// An agent SDK a runner runs, and its models.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SdkOffer {
    /// SDK name (e.g. `gantry`).
    pub name: String,
    /// Models it can run.
    pub models: Vec<ModelOffer>,
}

/// A model, and the reasoning levels it supports (empty: default only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelOffer {
    /// Model name.
    pub name: String,
    /// Supported reasoning levels.
    pub reasoning: Vec<String>,
}

/// The offers of a (validated) registration.
pub(crate) fn from_registration(request: &pb::RegisterRunnerRequest) -> Vec<SdkOffer> {
    request
        .agent_sdks
        .iter()
        .map(|sdk| SdkOffer {
            name: sdk.name.clone(),
            models: sdk
                .models
                .iter()
                .map(|m| ModelOffer {
                    name: m.name.clone(),
                    reasoning: m.reasoning.clone(),
                })
                .collect(),
        })
        .collect()
}

/// Whether `offers` include `sdk`, and `model` under it when one is asked for.
pub(crate) fn includes(offers: &[SdkOffer], sdk: &str, model: Option<&str>) -> bool {
    offers.iter().any(|offer| {
        offer.name == sdk && model.is_none_or(|m| offer.models.iter().any(|o| o.name == m))
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
}
