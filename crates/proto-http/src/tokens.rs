//! The API's bearer tokens: 32 random bytes (hex), shown once when made by
//! `gantry tokens create`; only their SHA-256 is kept, in a JSON file of
//! the data dir (`http-tokens.json`, mode 0600). The server reads the file
//! on each request, so a token made or revoked by another process counts
//! at once.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The file's name in the data dir.
pub const TOKENS_FILE: &str = "http-tokens.json";

/// Longest token name accepted.
const MAX_NAME_LEN: usize = 128;

/// Bytes of randomness in a token.
const TOKEN_BYTES: usize = 32;

/// One stored token (its hash, never the token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Its name, unique.
    pub name: String,
    /// SHA-256 of the token, hex.
    pub hash: String,
    /// Allowed `GET` and `HEAD` only.
    #[serde(default)]
    pub read_only: bool,
    /// When it was made, unix milliseconds.
    pub created_at: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TokensFile {
    #[serde(default)]
    tokens: Vec<TokenRecord>,
}

/// Why the tokens could not be read or changed.
#[derive(Debug)]
pub enum TokenError {
    /// The name is empty, too long, or has control characters.
    BadName(String),
    /// A token of that name exists.
    Exists(String),
    /// Reading, writing or parsing the file, or the random source, failed.
    Io(String),
}

impl std::fmt::Display for TokenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadName(name) => write!(
                f,
                "invalid token name {name:?}: use 1 to {MAX_NAME_LEN} printable characters"
            ),
            Self::Exists(name) => {
                write!(f, "a token named {name:?} already exists (revoke it first)")
            }
            Self::Io(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for TokenError {}

/// The tokens file of a data dir.
#[derive(Debug, Clone)]
pub struct Tokens {
    path: PathBuf,
}

impl Tokens {
    /// The tokens kept in `data_dir`.
    pub fn in_dir(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(TOKENS_FILE),
        }
    }

    /// The tokens kept at `path` (tests).
    pub fn at(path: PathBuf) -> Self {
        Self { path }
    }

    /// Every stored token (none when the file does not exist).
    pub fn list(&self) -> Result<Vec<TokenRecord>, TokenError> {
        let text = match std::fs::read(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(TokenError::Io(format!(
                    "cannot read {}: {e}",
                    self.path.display()
                )));
            }
        };
        let file: TokensFile = serde_json::from_slice(&text).map_err(|e| {
            TokenError::Io(format!("{} is not a tokens file: {e}", self.path.display()))
        })?;
        Ok(file.tokens)
    }

    /// Makes a token named `name`; returns it with the token, shown this
    /// once.
    pub fn create(&self, name: &str, read_only: bool) -> Result<(TokenRecord, String), TokenError> {
        if name.trim().is_empty() || name.len() > MAX_NAME_LEN || name.chars().any(char::is_control)
        {
            return Err(TokenError::BadName(name.to_owned()));
        }
        let mut tokens = self.list()?;
        if tokens.iter().any(|t| t.name == name) {
            return Err(TokenError::Exists(name.to_owned()));
        }
        let mut bytes = [0u8; TOKEN_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| TokenError::Io(format!("cannot generate a token: {e}")))?;
        let token = hex::encode(bytes);
        let record = TokenRecord {
            name: name.to_owned(),
            hash: hex::encode(hash(&token)),
            read_only,
            created_at: now_ms(),
        };
        tokens.push(record.clone());
        self.write(tokens)?;
        Ok((record, token))
    }

    /// Revokes the token named `name`; whether there was one.
    pub fn revoke(&self, name: &str) -> Result<bool, TokenError> {
        let mut tokens = self.list()?;
        let before = tokens.len();
        tokens.retain(|t| t.name != name);
        if tokens.len() == before {
            return Ok(false);
        }
        self.write(tokens)?;
        Ok(true)
    }

    /// Writes the file whole (a temporary file renamed over it, so a
    /// reader never sees half of it), readable by its owner only.
    fn write(&self, tokens: Vec<TokenRecord>) -> Result<(), TokenError> {
        let io = |e: std::io::Error| {
            TokenError::Io(format!("cannot write {}: {e}", self.path.display()))
        };
        let text = serde_json::to_vec_pretty(&TokensFile { tokens })
            .map_err(|e| TokenError::Io(e.to_string()))?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&tmp).map_err(io)?;
        file.write_all(&text).map_err(io)?;
        file.sync_all().map_err(io)?;
        std::fs::rename(&tmp, &self.path).map_err(io)
    }
}

/// The token among `known` whose hash is `token`'s. Every stored hash is
/// compared in full, in constant time, so timing tells nothing about which
/// one (nearly) matched.
pub(crate) fn find<'a>(known: &'a [TokenRecord], token: &str) -> Option<&'a TokenRecord> {
    let digest = hash(token);
    let mut found = None;
    for record in known {
        let mut stored = [0u8; 32];
        if hex::decode_to_slice(&record.hash, &mut stored).is_err() {
            tracing::warn!(token = %record.name, "stored API token hash is not SHA-256 hex; it cannot be used");
            continue;
        }
        let diff = stored
            .iter()
            .zip(digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        if diff == 0 {
            found = Some(record);
        }
    }
    found
}

fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_kept_hashed_and_found_only_by_its_exact_value() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = Tokens::in_dir(dir.path());
        assert!(tokens.list().unwrap().is_empty());
        let (record, token) = tokens.create("ci", true).unwrap();
        assert!(record.read_only);
        let text = std::fs::read_to_string(dir.path().join(TOKENS_FILE)).unwrap();
        assert!(!text.contains(&token), "the token itself is never stored");
        let known = tokens.list().unwrap();
        assert_eq!(find(&known, &token).map(|r| r.name.as_str()), Some("ci"));
        assert!(find(&known, &token[1..]).is_none());
        assert!(matches!(
            tokens.create("ci", false),
            Err(TokenError::Exists(_))
        ));
        assert!(matches!(
            tokens.create(" ", false),
            Err(TokenError::BadName(_))
        ));
        assert!(tokens.revoke("ci").unwrap());
        assert!(!tokens.revoke("ci").unwrap());
        assert!(tokens.list().unwrap().is_empty());
    }
}
