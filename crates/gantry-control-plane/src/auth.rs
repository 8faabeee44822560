//! Runner authentication: bearer tokens of 32 random bytes (hex), of which
//! only the SHA-256 is stored; a presented token is hashed and compared in
//! constant time with every known hash.

use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};
use tonic::Status;
use tonic::metadata::MetadataMap;

use gantry_runner_protocol::ProtocolVersion;

use crate::now_ms;
use crate::store::{ControlPlaneStore, RunnerRecord, StoreError};

/// Bytes of randomness in a token.
const TOKEN_BYTES: usize = 32;

/// Longest runner name accepted.
const MAX_NAME_LEN: usize = 128;

/// An authenticated runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerIdentity {
    /// Runner id.
    pub id: String,
    /// Runner name.
    pub name: String,
    /// The protocol version it was pinned to, if any.
    pub protocol: Option<ProtocolVersion>,
}

/// Why a runner could not be added.
#[derive(Debug, thiserror::Error)]
pub enum AddRunnerError {
    /// The name is empty, too long, or has control characters.
    #[error("invalid runner name {0:?}: use 1 to 128 printable characters")]
    BadName(String),
    /// A runner of that name exists.
    #[error("a runner named {0:?} already exists")]
    Exists(String),
    /// The system's random source failed.
    #[error("cannot generate a token: {0}")]
    Random(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adds a runner to `store` and returns it with its token, which is shown
/// this once: only its hash is kept.
pub async fn add_runner(
    store: &dyn ControlPlaneStore,
    name: &str,
    protocol: Option<ProtocolVersion>,
) -> Result<(RunnerRecord, String), AddRunnerError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control) {
        return Err(AddRunnerError::BadName(name.to_owned()));
    }
    if store.runner_by_name(name).await?.is_some() {
        return Err(AddRunnerError::Exists(name.to_owned()));
    }
    let token = new_token().map_err(|e| AddRunnerError::Random(e.to_string()))?;
    let runner = RunnerRecord {
        id: uuid::Uuid::now_v7().to_string(),
        name: name.to_owned(),
        token_hash: hex::encode(hash(&token)),
        sdks: "[]".to_owned(),
        created_at: now_ms(),
        registered_at: None,
        protocol: protocol.map(|p| p.as_str().to_owned()),
    };
    store.add_runner(&runner).await?;
    Ok((runner, token))
}

/// A new token: [`TOKEN_BYTES`] random bytes, hex.
pub(super) fn new_token() -> Result<String, getrandom::Error> {
    let mut secret = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut secret)?;
    Ok(hex::encode(secret))
}

/// SHA-256 of a token.
pub(super) fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The known runners' token hashes, checked on every call.
pub(crate) struct Tokens {
    store: Arc<dyn ControlPlaneStore>,
    known: RwLock<Vec<([u8; 32], RunnerIdentity)>>,
}

impl Tokens {
    /// Loads the hashes of every stored runner.
    pub(crate) async fn load(store: Arc<dyn ControlPlaneStore>) -> Result<Self, StoreError> {
        let tokens = Self {
            store,
            known: RwLock::new(Vec::new()),
        };
        tokens.reload().await?;
        Ok(tokens)
    }

    /// Rereads the runners from the store (runners may be added by another
    /// process: `gantry control-plane add-runner` while the server runs).
    pub(crate) async fn reload(&self) -> Result<(), StoreError> {
        let runners = self.store.runners().await?;
        let known = runners
            .into_iter()
            .filter_map(|r| {
                let mut digest = [0u8; 32];
                match hex::decode_to_slice(&r.token_hash, &mut digest) {
                    Ok(()) => Some((digest, RunnerIdentity {
                        protocol: r.protocol.as_deref().and_then(|p| p.parse().ok()),
                        id: r.id,
                        name: r.name,
                    })),
                    Err(e) => {
                        tracing::warn!(runner = %r.id, error = %e, "stored token hash is not SHA-256 hex; runner cannot connect");
                        None
                    }
                }
            })
            .collect();
        if let Ok(mut slot) = self.known.write() {
            *slot = known;
        }
        Ok(())
    }

    /// The runner whose token is in the call's `authorization: Bearer`
    /// metadata, else `UNAUTHENTICATED`.
    pub(crate) async fn authenticate(
        &self,
        metadata: &MetadataMap,
    ) -> Result<RunnerIdentity, Status> {
        let token = metadata
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| {
                Status::unauthenticated("missing `authorization: Bearer <token>` metadata")
            })?;
        let digest = hash(token);
        if let Some(runner) = self.find(&digest) {
            return Ok(runner);
        }
        // Unknown here: maybe added since we last looked.
        if let Err(e) = self.reload().await {
            tracing::warn!(error = %e, "cannot reload runner tokens");
        }
        self.find(&digest)
            .ok_or_else(|| Status::unauthenticated("unknown runner token"))
    }

    /// The runner whose hash equals `digest`. Every known hash is compared
    /// in full, so timing tells nothing about which one (nearly) matched.
    fn find(&self, digest: &[u8; 32]) -> Option<RunnerIdentity> {
        let known = self.known.read().ok()?;
        let mut found = None;
        for (candidate, runner) in known.iter() {
            if same(candidate, digest) {
                found = Some(runner.clone());
            }
        }
        found
    }
}

/// Compares in time independent of where the inputs differ.
pub(super) fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_compare_equal_only_when_every_byte_does() {
        let a = hash("one");
        let mut b = a;
        assert!(same(&a, &b));
        b[31] ^= 1;
        assert!(!same(&a, &b));
    }
}
