//! API keys at rest: every `"api_key"` string in what the SQLite store
//! writes (a thread's own model server in its events and row, a provider's
//! literal key) is sealed with AES-256-GCM as `enc:v1:<base64 of nonce,
//! ciphertext and tag>`, under a key kept in `secret.key` (mode 0600) next
//! to the database. Sandboxed commands cannot read the data dir, so the
//! agent sees neither the database nor the key.
//!
//! The key file is made when the first key is sealed, not when the store
//! opens: most data dirs never hold a key, and making it costs an fsync.
//!
//! Plaintext keys written before sealing existed still load as they are.
//! A sealed value that does not open (the key file was replaced) is dropped:
//! the thread or provider loads without its key.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::Value;

use crate::StoreError;

/// The prefix of a sealed value.
const PREFIX: &str = "enc:v1:";

/// The field whose string values are sealed, wherever it appears.
const FIELD: &str = "api_key";

/// Bound to every sealed value, so a ciphertext of another use of the same
/// key cannot pass for one.
const AAD: &[u8] = b"gantry api_key v1";

/// Seals and opens the keys one store keeps.
pub(crate) struct Sealer {
    /// The key file.
    path: PathBuf,
    /// Its key, once read or made.
    key: OnceLock<LessSafeKey>,
    /// Held while the file is made, so no thread reads it half written.
    making: std::sync::Mutex<()>,
    rng: SystemRandom,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// The key at `path`, read now if the file is there (a bad one fails the
    /// open), otherwise made (mode 0600, random) when first needed.
    pub(crate) fn load_or_create(path: &Path) -> Result<Self, StoreError> {
        let sealer = Self {
            path: path.to_owned(),
            key: OnceLock::new(),
            making: std::sync::Mutex::new(()),
            rng: SystemRandom::new(),
        };
        if let Some(key) = read_key(path)? {
            let _ = sealer.key.set(key);
        }
        Ok(sealer)
    }

    /// The key, made and synced to its file if there is none yet. Another
    /// process making it at the same time wins or loses the same race as
    /// `create_new`: the loser reads the winner's key.
    fn key_or_create(&self) -> Result<&LessSafeKey, StoreError> {
        if let Some(key) = self.key.get() {
            return Ok(key);
        }
        // A poisoned lock only means another thread failed to make the file.
        let _making = self
            .making
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(key) = self.key.get() {
            return Ok(key);
        }
        let key = match read_key(&self.path)? {
            Some(key) => key,
            None => create_key(&self.path)?,
        };
        Ok(self.key.get_or_init(|| key))
    }

    /// The key if there is one (it may have been made since the open, by
    /// another process); never makes one: a value with no key cannot open.
    fn existing_key(&self) -> Option<&LessSafeKey> {
        if let Some(key) = self.key.get() {
            return Some(key);
        }
        let key = read_key(&self.path).ok()??;
        Some(self.key.get_or_init(|| key))
    }

    /// `plain` sealed: `enc:v1:<base64>`.
    pub(crate) fn seal(&self, plain: &str) -> Result<String, StoreError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng
            .fill(&mut nonce)
            .map_err(|_| StoreError::Database("no randomness for a nonce".into()))?;
        let mut data = plain.as_bytes().to_vec();
        self.key_or_create()?
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut data,
            )
            .map_err(|_| StoreError::Database("cannot seal a key".into()))?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Ok(format!("{PREFIX}{}", BASE64.encode(out)))
    }

    /// The plaintext of a value [`Sealer::seal`] made; `None` when `sealed`
    /// is not one, or not one of this key.
    pub(crate) fn open(&self, sealed: &str) -> Option<String> {
        let raw = BASE64.decode(sealed.strip_prefix(PREFIX)?).ok()?;
        let (nonce, rest) = raw.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut data = rest.to_vec();
        let plain = self
            .existing_key()?
            .open_in_place(nonce, Aad::from(AAD), &mut data)
            .ok()?;
        String::from_utf8(plain.to_vec()).ok()
    }

    /// `json` with every `"api_key"` string sealed. Text without the field
    /// (nearly every event) is returned untouched, unparsed.
    pub(crate) fn seal_json(&self, json: String) -> Result<String, StoreError> {
        if !json.contains("\"api_key\"") {
            return Ok(json);
        }
        let mut value: Value = serde_json::from_str(&json)
            .map_err(|e| StoreError::Database(format!("seal keys: {e}")))?;
        let mut failed = None;
        walk(&mut value, &mut |s| {
            if !s.starts_with(PREFIX) {
                match self.seal(s) {
                    Ok(sealed) => *s = sealed,
                    Err(e) => failed = Some(e),
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        serde_json::to_string(&value).map_err(|e| StoreError::Database(format!("seal keys: {e}")))
    }

    /// `json` with every sealed `"api_key"` opened (dropped when it does not
    /// open). Text without sealed values is returned as it is.
    pub(crate) fn open_json<'a>(&self, json: &'a str) -> Cow<'a, str> {
        // serde_json writes compact JSON, so a sealed field reads exactly so.
        if !json.contains("\"api_key\":\"enc:v1:") {
            return Cow::Borrowed(json);
        }
        let Ok(mut value) = serde_json::from_str::<Value>(json) else {
            // Left to the decoder, which reports bad JSON as corrupt.
            return Cow::Borrowed(json);
        };
        drop_unopened(&mut value, self);
        match serde_json::to_string(&value) {
            Ok(text) => Cow::Owned(text),
            Err(_) => Cow::Borrowed(json),
        }
    }
}

/// Calls `f` on every string value of a field named [`FIELD`].
fn walk(value: &mut Value, f: &mut impl FnMut(&mut String)) {
    match value {
        Value::Object(map) => {
            for (name, v) in map.iter_mut() {
                match v {
                    Value::String(s) if name == FIELD => f(s),
                    _ => walk(v, f),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| walk(v, f)),
        _ => {}
    }
}

/// Opens the sealed [`FIELD`] values under `value`; removes those that do
/// not open, so the thread or provider loads without a key.
fn drop_unopened(value: &mut Value, sealer: &Sealer) {
    match value {
        Value::Object(map) => {
            let mut lost = Vec::new();
            for (name, v) in map.iter_mut() {
                match v {
                    Value::String(s) if name == FIELD && s.starts_with(PREFIX) => {
                        match sealer.open(s) {
                            Some(plain) => *s = plain,
                            None => lost.push(name.clone()),
                        }
                    }
                    _ => drop_unopened(v, sealer),
                }
            }
            for name in lost {
                map.remove(&name);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| drop_unopened(v, sealer)),
        _ => {}
    }
}

/// The 32-byte key in the file at `path`; `None` if there is no file.
fn read_key(path: &Path) -> Result<Option<LessSafeKey>, StoreError> {
    match std::fs::read(path) {
        Ok(bytes) => parse_key(path, &bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, e)),
    }
}

/// A new random key written to a new file at `path` (or, if another process
/// wrote one first, theirs).
fn create_key(path: &Path) -> Result<LessSafeKey, StoreError> {
    let mut key = [0u8; 32];
    SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| StoreError::Database("no randomness for a new key".into()))?;
    match create_private(path, &key) {
        Ok(()) => parse_key(path, &key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path)?
            .ok_or_else(|| io_error("read", path, std::io::ErrorKind::NotFound.into())),
        Err(e) => Err(io_error("create", path, e)),
    }
}

fn parse_key(path: &Path, bytes: &[u8]) -> Result<LessSafeKey, StoreError> {
    let key = UnboundKey::new(&AES_256_GCM, bytes).map_err(|_| {
        StoreError::Corrupt(format!(
            "{}: not a 32-byte key ({} bytes)",
            path.display(),
            bytes.len()
        ))
    })?;
    Ok(LessSafeKey::new(key))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    StoreError::Database(format!("{what} {}: {e}", path.display()))
}

/// Writes `key` to a new file at `path` readable by its owner only.
fn create_private(path: &Path, key: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(key)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> (tempfile::TempDir, Sealer) {
        let dir = tempfile::tempdir().unwrap();
        let s = Sealer::load_or_create(&dir.path().join("secret.key")).unwrap();
        (dir, s)
    }

    #[test]
    fn round_trip_and_file_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, s) = sealer();
        let json = r#"{"a":{"api_key":"sk-test-SECRET123","b":[{"api_key":"k2"}]},"n":1}"#;
        let sealed = s.seal_json(json.to_owned()).unwrap();
        let mode = std::fs::metadata(dir.path().join("secret.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!sealed.contains("sk-test-SECRET123") && !sealed.contains("\"k2\""));
        assert_eq!(sealed.matches(PREFIX).count(), 2);
        let opened: Value = serde_json::from_str(&s.open_json(&sealed)).unwrap();
        assert_eq!(opened, serde_json::from_str::<Value>(json).unwrap());
        // Sealing again leaves sealed values alone.
        assert_eq!(s.seal_json(sealed.clone()).unwrap(), sealed);
        // The same key file opens them after a restart.
        let again = Sealer::load_or_create(&dir.path().join("secret.key")).unwrap();
        assert!(again.open_json(&sealed).contains("sk-test-SECRET123"));
    }

    #[test]
    fn the_key_file_is_made_by_the_first_seal_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let s = Sealer::load_or_create(&path).unwrap();
        // Nothing to seal, and a sealed value with no key: no file.
        assert_eq!(
            s.seal_json(r#"{"model":"m"}"#.to_owned()).unwrap(),
            r#"{"model":"m"}"#
        );
        let (_other_dir, other) = sealer();
        let foreign = other.seal_json(r#"{"api_key":"k"}"#.to_owned()).unwrap();
        assert_eq!(s.open_json(&foreign), "{}");
        assert!(!path.exists());

        let sealed = s.seal_json(r#"{"api_key":"sk-1"}"#.to_owned()).unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 32);
        let again = Sealer::load_or_create(&path).unwrap();
        assert_eq!(again.open_json(&sealed), r#"{"api_key":"sk-1"}"#);
    }

    #[test]
    fn a_key_file_made_by_another_process_after_the_open_is_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let late = Sealer::load_or_create(&path).unwrap();
        let first = Sealer::load_or_create(&path).unwrap();
        let sealed = first.seal_json(r#"{"api_key":"sk-1"}"#.to_owned()).unwrap();
        assert_eq!(late.open_json(&sealed), r#"{"api_key":"sk-1"}"#);
        let sealed_late = late.seal_json(r#"{"api_key":"sk-2"}"#.to_owned()).unwrap();
        assert_eq!(first.open_json(&sealed_late), r#"{"api_key":"sk-2"}"#);
    }

    #[test]
    fn a_key_file_of_the_wrong_size_fails_the_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        std::fs::write(&path, "short").unwrap();
        let error = Sealer::load_or_create(&path).unwrap_err().to_string();
        assert!(error.contains("not a 32-byte key"), "{error}");
    }

    #[test]
    fn plaintext_loads_and_foreign_values_are_dropped() {
        let (_dir, s) = sealer();
        let plain = r#"{"api_key":"sk-old"}"#;
        assert_eq!(s.open_json(plain), plain);
        let (_other_dir, other) = sealer();
        let foreign = other.seal_json(plain.to_owned()).unwrap();
        assert_eq!(s.open_json(&foreign), "{}");
    }
}
