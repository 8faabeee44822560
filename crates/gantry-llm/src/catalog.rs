//! The model catalog: what is known about well-known models (capabilities,
//! prices, limits) in the models.dev shape. The built-in data ships in
//! `catalog/models.json`; configuration can add or override entries.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use gantry_types::{ModelInfo, ProviderKind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The shipped catalog data: `{ "<id>": { "provider": "...", <models.dev fields> } }`.
const BUILTIN_JSON: &str = include_str!("../catalog/models.json");

/// One catalog entry: the model and the vendor it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogEntry {
    /// The vendor (`openai`, `anthropic`) or a provider kind (`openai-chat`, ...).
    #[serde(default)]
    pub provider: String,
    /// The models.dev fields.
    #[serde(flatten)]
    pub info: ModelInfo,
}

/// Models by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    entries: BTreeMap<String, CatalogEntry>,
}

impl Catalog {
    /// The catalog shipped with Gantry, parsed once on first use.
    pub fn builtin() -> &'static Catalog {
        static BUILTIN: OnceLock<Catalog> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            Catalog::parse(BUILTIN_JSON).unwrap_or_else(|e| {
                // A unit test parses the shipped data, so this cannot happen in a release.
                tracing::error!("the built-in model catalog does not parse: {e}");
                Catalog::default()
            })
        })
    }

    /// Parses catalog JSON (an object keyed by model id).
    pub fn parse(json: &str) -> Result<Catalog, String> {
        let entries: BTreeMap<String, CatalogEntry> =
            serde_json::from_str(json).map_err(|e| format!("model catalog: {e}"))?;
        Ok(Catalog {
            entries: entries
                .into_iter()
                .map(|(id, mut entry)| {
                    fill_id(&id, &mut entry.info);
                    (id, entry)
                })
                .collect(),
        })
    }

    /// What is known about `id`.
    pub fn get(&self, id: &str) -> Option<&ModelInfo> {
        self.entries.get(id).map(|e| &e.info)
    }

    /// The entry of `id`, with its vendor.
    pub fn entry(&self, id: &str) -> Option<&CatalogEntry> {
        self.entries.get(id)
    }

    /// Every entry, by id.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &CatalogEntry)> {
        self.entries.iter().map(|(id, e)| (id.as_str(), e))
    }

    /// Number of models.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the catalog knows no model.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The kind of provider that serves `id` by default: OpenAI models go to
    /// the Responses API, Anthropic models to Messages.
    pub fn provider_of(&self, id: &str) -> Option<ProviderKind> {
        let vendor = self.entries.get(id)?.provider.as_str();
        match vendor {
            "openai" => Some(ProviderKind::OpenaiResponses),
            "anthropic" => Some(ProviderKind::Anthropic),
            other => other.parse().ok(),
        }
    }

    /// A copy with `overrides` applied. Each override is a (partial) entry in
    /// the same shape, merged field by field into the existing entry, or a new
    /// entry when the id is unknown. Fails naming the model on a bad field.
    pub fn with_overrides(&self, overrides: &BTreeMap<String, Value>) -> Result<Catalog, String> {
        let mut out = self.clone();
        for (id, patch) in overrides {
            if !patch.is_object() {
                return Err(format!("model `{id}`: expected a table of fields"));
            }
            let mut base = match self.entries.get(id) {
                Some(entry) => {
                    serde_json::to_value(entry).map_err(|e| format!("model `{id}`: {e}"))?
                }
                None => serde_json::json!({ "id": id, "name": id }),
            };
            merge(&mut base, patch);
            let mut entry: CatalogEntry =
                serde_json::from_value(base).map_err(|e| format!("model `{id}`: {e}"))?;
            fill_id(id, &mut entry.info);
            out.entries.insert(id.clone(), entry);
        }
        Ok(out)
    }
}

fn fill_id(id: &str, info: &mut ModelInfo) {
    if info.id.is_empty() {
        info.id = id.to_owned();
    }
    if info.name.is_empty() {
        info.name = id.to_owned();
    }
}

/// Deep-merges `patch` into `base`: objects field by field, anything else replaced.
fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(base), Value::Object(patch)) => {
            for (key, value) in patch {
                match base.get_mut(key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (slot, value) => *slot = value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_data_parses_and_every_entry_is_usable() {
        let catalog = Catalog::parse(BUILTIN_JSON).unwrap();
        assert!(catalog.len() >= 15, "{}", catalog.len());
        for (id, entry) in catalog.entries() {
            assert_eq!(entry.info.id, id);
            assert!(entry.info.limit.context > 0, "{id}: no context limit");
            assert!(entry.info.limit.output > 0, "{id}: no output limit");
            assert!(
                entry.info.cost.input > 0.0 && entry.info.cost.output > 0.0,
                "{id}"
            );
            assert!(catalog.provider_of(id).is_some(), "{id}: unknown provider");
        }
        assert_eq!(Catalog::builtin().len(), catalog.len());
    }

    #[test]
    fn lookups() {
        let c = Catalog::builtin();
        assert_eq!(
            c.provider_of("gpt-4.1"),
            Some(ProviderKind::OpenaiResponses)
        );
        assert_eq!(
            c.provider_of("claude-sonnet-4-5"),
            Some(ProviderKind::Anthropic)
        );
        assert!(c.get("o3").is_some_and(|m| m.reasoning));
        assert!(c.get("gpt-4.1").is_some_and(|m| !m.reasoning));
        assert!(c.get("nope").is_none());
    }

    #[test]
    fn overrides_merge_fields_and_add_models() {
        let overrides: BTreeMap<String, Value> = serde_json::from_value(serde_json::json!({
            "gpt-4.1": { "cost": { "input": 1.0 } },
            "qwen3-coder": { "provider": "openai-chat", "limit": { "context": 32768, "output": 8192 } }
        }))
        .unwrap();
        let c = Catalog::builtin().with_overrides(&overrides).unwrap();
        let gpt = c.get("gpt-4.1").unwrap();
        assert_eq!(gpt.cost.input, 1.0);
        assert_eq!(gpt.cost.output, 8.0, "untouched fields stay");
        let qwen = c.get("qwen3-coder").unwrap();
        assert_eq!(
            (qwen.id.as_str(), qwen.limit.context),
            ("qwen3-coder", 32768)
        );
        assert_eq!(c.provider_of("qwen3-coder"), Some(ProviderKind::OpenaiChat));

        let bad: BTreeMap<String, Value> =
            serde_json::from_value(serde_json::json!({ "m": { "limit": { "context": "big" } } }))
                .unwrap();
        let err = Catalog::builtin().with_overrides(&bad).unwrap_err();
        assert!(err.starts_with("model `m`"), "{err}");
    }
}
