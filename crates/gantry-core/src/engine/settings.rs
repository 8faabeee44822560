//! Settings a host or protocol adapter keeps in the engine's store, each
//! under a namespace of its own (e.g. the defaults a protocol gives the
//! threads it creates), so they survive a restart without the adapter
//! reaching the store.

use super::*;

/// Adapters' persisted settings: one JSON document per namespace. Get one
/// from [`Engine::settings`].
#[derive(Clone, Copy)]
pub struct Settings<'e> {
    pub(crate) engine: &'e Engine,
}

/// The store setting of a namespace; the engine's own settings never start
/// with `adapter.`.
fn store_key(namespace: &str) -> Result<String, EngineError> {
    let valid = !namespace.is_empty()
        && namespace
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !valid {
        return Err(EngineError::InvalidInput(format!(
            "settings namespace `{namespace}`: use lowercase letters, digits, `_` and `-`"
        )));
    }
    Ok(format!("adapter.{namespace}"))
}

impl Settings<'_> {
    /// The namespace's document, if one was stored (one that no longer
    /// parses reads as none, with a warning: an adapter starts from its
    /// defaults rather than failing).
    pub async fn get(self, namespace: &str) -> Result<Option<serde_json::Value>, EngineError> {
        let key = store_key(namespace)?;
        let Some(text) = self.engine.shared.store.setting(&key).await? else {
            return Ok(None);
        };
        match serde_json::from_str(&text) {
            Ok(value) => Ok(Some(value)),
            Err(e) => {
                tracing::warn!(namespace, error = %e, "ignoring unreadable adapter settings");
                Ok(None)
            }
        }
    }

    /// Replaces the namespace's document.
    pub async fn put(self, namespace: &str, value: &serde_json::Value) -> Result<(), EngineError> {
        let key = store_key(namespace)?;
        self.engine
            .shared
            .store
            .put_setting(&key, &value.to_string())
            .await?;
        Ok(())
    }
}
