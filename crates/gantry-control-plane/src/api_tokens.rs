//! The HTTP API's users' bearer tokens: 32 random bytes (hex) like runner
//! tokens, of which only the SHA-256 is stored, made and revoked by
//! `gantry control-plane create-token` / `revoke-token` (another process
//! than the server, whose store notices the change at the next request).
//! A read-only token (`create-token --read-only`) may only read.

use crate::auth::{hash, new_token, same};
use crate::now_ms;
use crate::store::{ApiTokenRecord, ControlPlaneStore, StoreError};

/// Longest token name accepted.
const MAX_NAME_LEN: usize = 128;

/// Why an API token could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ApiTokenError {
    /// The name is empty, too long, or has control characters.
    #[error("invalid token name {0:?}: use 1 to 128 printable characters")]
    BadName(String),
    /// A token of that name exists.
    #[error("a token named {0:?} already exists (revoke it first)")]
    Exists(String),
    /// The system's random source failed.
    #[error("cannot generate a token: {0}")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates an HTTP API token named `name` in `store`, which may only read
/// (`GET`, `HEAD`) when `read_only`; returns it with the token, which is
/// shown this once: only its hash is kept.
pub async fn create_api_token(
    store: &dyn ControlPlaneStore,
    name: &str,
    read_only: bool,
) -> Result<(ApiTokenRecord, String), ApiTokenError> {
    if name.trim().is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(ApiTokenError::BadName(name.to_owned()));
    }
    if store.api_tokens().await?.iter().any(|t| t.name == name) {
        return Err(ApiTokenError::Exists(name.to_owned()));
    }
    let token = new_token().map_err(|e| ApiTokenError::Random(e.to_string()))?;
    let record = ApiTokenRecord {
        id: uuid::Uuid::now_v7().to_string(),
        name: name.to_owned(),
        token_hash: hex::encode(hash(&token)),
        created_at: now_ms(),
        read_only,
    };
    store.add_api_token(&record).await?;
    Ok((record, token))
}

/// Revokes the HTTP API token named `name`; whether there was one. The
/// server stops accepting it with its next request.
pub async fn revoke_api_token(
    store: &dyn ControlPlaneStore,
    name: &str,
) -> Result<bool, StoreError> {
    store.revoke_api_token(name).await
}

/// The token among `known` whose hash is `token`'s. Every stored hash is
/// compared in full, in constant time, so timing tells nothing about which
/// one (nearly) matched.
pub(super) fn find<'a>(known: &'a [ApiTokenRecord], token: &str) -> Option<&'a ApiTokenRecord> {
    let digest = hash(token);
    let mut found = None;
    for record in known {
        let mut stored = [0u8; 32];
        if hex::decode_to_slice(&record.token_hash, &mut stored).is_err() {
            tracing::warn!(token = %record.name, "stored API token hash is not SHA-256 hex; it cannot be used");
            continue;
        }
        if same(&stored, &digest) {
            found = Some(record);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, token: &str) -> ApiTokenRecord {
        ApiTokenRecord {
            id: name.into(),
            name: name.into(),
            token_hash: hex::encode(hash(token)),
            created_at: 0,
            read_only: false,
        }
    }

    #[test]
    fn a_token_is_found_only_by_its_exact_value() {
        let known = vec![record("a", "secret-a"), record("b", "secret-b")];
        assert_eq!(find(&known, "secret-b").map(|r| r.name.as_str()), Some("b"));
        assert!(find(&known, "secret-").is_none());
        assert!(find(&known, "").is_none());
        assert!(find(&[], "secret-a").is_none());
    }
}
