//! A change to a thread's settings that a wire can carry: JSON merge-patch
//! semantics (a field left out keeps its value, `null` clears it, a value
//! sets it), so two clients changing different fields never undo each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use crate::{ModelEndpoint, ThreadSettings};

/// A change to [`ThreadSettings`]. `None` keeps a field; `Some(None)`
/// clears an optional one; `Some(Some(v))` sets it. Metadata merges key by
/// key (`None` removes a key).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadSettingsPatch {
    /// The thread's name.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub name: Option<Option<String>>,
    /// The model (cannot be cleared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reasoning effort.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub reasoning: Option<Option<String>>,
    /// Extra instructions.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub instructions: Option<Option<String>>,
    /// The thread's own model server (cleared: the configured providers).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub endpoint: Option<Option<ModelEndpoint>>,
    /// Sampling temperature.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub temperature: Option<Option<f32>>,
    /// Cap on the tokens of each model answer.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub max_output_tokens: Option<Option<u32>>,
    /// The workspace (an absolute path; cannot be cleared). The engine
    /// moves a thread only between turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Metadata keys to set (`Some`) or remove (`None`); others are kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Option<String>>,
}

/// A field that is present deserializes to `Some`, even when `null`
/// (serde's default would fold `null` into "absent").
fn present<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(de).map(Some)
}

impl ThreadSettingsPatch {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The settings with this change applied (not yet validated).
    pub fn apply_to(&self, settings: &mut ThreadSettings) {
        fn set<T: Clone>(field: &mut T, change: &Option<T>) {
            if let Some(value) = change {
                field.clone_from(value);
            }
        }
        set(&mut settings.name, &self.name);
        set(&mut settings.model, &self.model);
        set(&mut settings.reasoning, &self.reasoning);
        set(&mut settings.instructions, &self.instructions);
        set(&mut settings.endpoint, &self.endpoint);
        set(&mut settings.temperature, &self.temperature);
        set(&mut settings.max_output_tokens, &self.max_output_tokens);
        if let Some(cwd) = &self.cwd {
            settings.cwd = Some(cwd.clone());
        }
        for (key, value) in &self.metadata {
            match value {
                Some(value) => settings.metadata.insert(key.clone(), value.clone()),
                None => settings.metadata.remove(key),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> ThreadSettings {
        ThreadSettings {
            name: Some("old".into()),
            model: "m".into(),
            reasoning: Some("high".into()),
            instructions: None,
            endpoint: None,
            temperature: Some(0.5),
            max_output_tokens: None,
            metadata: BTreeMap::from([("keep".into(), "1".into()), ("drop".into(), "2".into())]),
            cwd: Some("/ws".into()),
        }
    }

    #[test]
    fn absent_keeps_null_clears_value_sets() {
        let patch: ThreadSettingsPatch = serde_json::from_str(
            r#"{"name":"new","reasoning":null,"max_output_tokens":64,"metadata":{"drop":null,"add":"3"}}"#,
        )
        .unwrap();
        let mut s = settings();
        patch.apply_to(&mut s);
        assert_eq!(s.name.as_deref(), Some("new"));
        assert_eq!(s.reasoning, None, "null clears");
        assert_eq!(s.temperature, Some(0.5), "absent keeps");
        assert_eq!(s.max_output_tokens, Some(64));
        assert_eq!(s.model, "m");
        assert_eq!(
            s.metadata,
            BTreeMap::from([("keep".into(), "1".into()), ("add".into(), "3".into())])
        );
    }

    #[test]
    fn a_patch_survives_the_wire_including_its_clears() {
        let patch = ThreadSettingsPatch {
            reasoning: Some(None),
            temperature: Some(Some(1.0)),
            metadata: BTreeMap::from([("k".into(), None)]),
            ..Default::default()
        };
        let json = serde_json::to_string(&patch).unwrap();
        let back: ThreadSettingsPatch = serde_json::from_str(&json).unwrap();
        assert_eq!(back, patch, "{json}");
        assert!(ThreadSettingsPatch::default().is_empty());
        assert_eq!(
            serde_json::to_string(&ThreadSettingsPatch::default()).unwrap(),
            "{}"
        );
    }
}
