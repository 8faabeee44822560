//! The model details A3S clients send with a provider (`ModelInfo`'s name,
//! family, capabilities, modalities, cost and limits), for which the
//! engine has no place (it keeps model ids per provider): kept in this
//! adapter's settings namespace, by provider and model id, and read back as
//! sent. A model sent with its id alone is not kept: the catalog describes
//! it. The engine still prices and sizes turns from its catalog.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use tonic::Status;

use super::Ctx;
use crate::pb;
use crate::status::status;

/// The settings namespace of the details.
const NAMESPACE: &str = "a3s-provider-models";

/// Read-modify-write of the namespace is one at a time, so two providers
/// added at once both keep their models.
static WRITING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every provider's described models: provider -> model id -> details.
pub(super) struct Described(BTreeMap<String, Map<String, Value>>);

impl Described {
    /// What is kept.
    pub(super) async fn load(ctx: &Ctx) -> Result<Self, Status> {
        let doc = ctx.engine.settings().get(NAMESPACE).await.map_err(status)?;
        let providers = match doc {
            Some(Value::Object(providers)) => providers
                .into_iter()
                .filter_map(|(name, models)| match models {
                    Value::Object(models) => Some((name, models)),
                    _ => None,
                })
                .collect(),
            _ => BTreeMap::new(),
        };
        Ok(Self(providers))
    }

    /// The model as its client described it, if it did.
    pub(super) fn model(&self, provider: &str, id: &str) -> Option<pb::ModelInfo> {
        let details = self.0.get(provider)?.get(id)?;
        Some(from_json(id, details))
    }

    /// Keeps `models` as the provider's described models (replacing what
    /// was kept for it); `None` forgets the provider's.
    pub(super) async fn keep(
        ctx: &Ctx,
        provider: &str,
        models: Option<&[pb::ModelInfo]>,
    ) -> Result<(), Status> {
        let _writing = WRITING.lock().await;
        let mut all = Self::load(ctx).await?.0;
        let described: Map<String, Value> = models
            .unwrap_or_default()
            .iter()
            .filter(|m| is_described(m))
            .map(|m| (m.id.clone(), to_json(m)))
            .collect();
        if described.is_empty() {
            all.remove(provider);
        } else {
            all.insert(provider.to_owned(), described);
        }
        let doc: Map<String, Value> = all
            .into_iter()
            .map(|(name, models)| (name, Value::Object(models)))
            .collect();
        ctx.engine
            .settings()
            .put(NAMESPACE, &Value::Object(doc))
            .await
            .map_err(status)
    }
}

/// Whether the client said anything about the model beyond its id.
fn is_described(m: &pb::ModelInfo) -> bool {
    let bare = pb::ModelInfo {
        id: m.id.clone(),
        api_key: m.api_key.clone(),
        base_url: m.base_url.clone(),
        ..pb::ModelInfo::default()
    };
    // An empty message in an optional field says nothing either.
    let mut m = m.clone();
    m.modalities = m.modalities.filter(|x| *x != Default::default());
    m.cost = m.cost.filter(|x| *x != Default::default());
    m.limit = m.limit.filter(|x| *x != Default::default());
    m != bare
}

fn to_json(m: &pb::ModelInfo) -> Value {
    let modalities = m.modalities.clone().unwrap_or_default();
    let cost = m.cost.unwrap_or_default();
    let limit = m.limit.unwrap_or_default();
    json!({
        "name": m.name,
        "family": m.family,
        "attachment": m.attachment,
        "reasoning": m.reasoning,
        "tool_call": m.tool_call,
        "temperature": m.temperature,
        "release_date": m.release_date,
        "modalities": {"input": modalities.input, "output": modalities.output},
        "cost": {"input": cost.input, "output": cost.output,
                 "cache_read": cost.cache_read, "cache_write": cost.cache_write},
        "limit": {"context": limit.context, "output": limit.output},
    })
}

fn from_json(id: &str, v: &Value) -> pb::ModelInfo {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let flag = |key: &str| v[key].as_bool().unwrap_or_default();
    let number = |v: &Value| v.as_f64().unwrap_or_default();
    let count = |v: &Value| {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or_default()
    };
    let texts = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    pb::ModelInfo {
        id: id.to_owned(),
        name: text(&v["name"]),
        family: text(&v["family"]),
        api_key: None,
        base_url: None,
        attachment: flag("attachment"),
        reasoning: flag("reasoning"),
        tool_call: flag("tool_call"),
        temperature: flag("temperature"),
        release_date: v["release_date"].as_str().map(str::to_owned),
        modalities: Some(pb::ModelModalitiesInfo {
            input: texts(&v["modalities"]["input"]),
            output: texts(&v["modalities"]["output"]),
        }),
        cost: Some(pb::ModelCostInfo {
            input: number(&v["cost"]["input"]),
            output: number(&v["cost"]["output"]),
            cache_read: number(&v["cost"]["cache_read"]),
            cache_write: number(&v["cost"]["cache_write"]),
        }),
        limit: Some(pb::ModelLimitInfo {
            context: count(&v["limit"]["context"]),
            output: count(&v["limit"]["output"]),
        }),
    }
}
