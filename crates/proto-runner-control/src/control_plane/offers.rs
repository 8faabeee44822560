//! What a runner offers: the agent SDKs and models of its registration,
//! kept as JSON in the store and shown by the API.

use serde::{Deserialize, Serialize};

use crate::pb;

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
