//! What one replica tells another over NATS is signed. Without it, anyone
//! who can publish on the NATS server passes for a replica: asks one to
//! send a message to its runner (which runs it as a turn), answers a
//! request in another's place, feeds followers a thread update no runner
//! wrote, or points a runner's lease at a replica of their own.
//!
//! Each message carries an HMAC-SHA256, under the secret the replicas keep
//! in the store they share ([`crate::store::ControlPlaneStore::cluster_secret`]),
//! of what it says and where it goes: a NATS client that cannot read the
//! store cannot make one. A routed request also carries when it was made;
//! one older than [`FRESH_FOR`] or seen before is refused, so a recorded
//! request cannot be played again. Who may read the messages is NATS's own
//! business (its users and permissions: the book's scale-out section).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use ring::hmac;
use ring::rand::{SecureRandom as _, SystemRandom};

/// How far a routed request's time may be from this replica's clock.
pub(super) const FRESH_FOR: Duration = Duration::from_secs(60);

/// What a signature is of: each kind of message signs under its own name,
/// so one cannot stand for another.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    /// A routed request: its subject, time and body.
    Call,
    /// A replica's answer: the request's signature and the answer's body.
    Answer,
    /// A thread update on the stream: its subject and body.
    Update,
    /// A runner lease: the runner's id and the lease.
    Lease,
}

impl Kind {
    fn name(self) -> &'static [u8] {
        match self {
            Self::Call => b"gantry-cp call",
            Self::Answer => b"gantry-cp answer",
            Self::Update => b"gantry-cp update",
            Self::Lease => b"gantry-cp lease",
        }
    }
}

/// Signs and checks replicas' messages, and remembers the requests seen.
pub(super) struct Seal {
    key: hmac::Key,
    /// Signatures of the requests taken, with when they were made (ms).
    seen: Mutex<HashMap<String, i64>>,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal")
    }
}

/// A new secret for the store to keep: 32 random bytes, hex.
pub(super) fn new_secret() -> Result<String, String> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system's random source failed".to_owned())?;
    Ok(hex::encode(bytes))
}

/// Milliseconds since the epoch, by this machine's clock.
pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Seal {
    /// Signs with the store's `secret`.
    pub(super) fn new(secret: &str) -> Self {
        Self {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes()),
            seen: Mutex::default(),
        }
    }

    /// `kind`'s name, then each part with its length first: no two lists
    /// of parts read alike.
    fn framed(kind: Kind, parts: &[&[u8]]) -> Vec<u8> {
        let len = parts.iter().map(|p| p.len() + 8).sum::<usize>();
        let mut framed = Vec::with_capacity(kind.name().len() + len);
        framed.extend_from_slice(kind.name());
        for part in parts {
            framed.extend_from_slice(&(part.len() as u64).to_be_bytes());
            framed.extend_from_slice(part);
        }
        framed
    }

    /// The signature of `parts` as a message of `kind` (base64).
    pub(super) fn sign(&self, kind: Kind, parts: &[&[u8]]) -> String {
        B64.encode(hmac::sign(&self.key, &Self::framed(kind, parts)))
    }

    /// Whether `signature` is this store's replicas' of `parts` as `kind`
    /// (compared in constant time).
    pub(super) fn verify(&self, kind: Kind, parts: &[&[u8]], signature: &str) -> bool {
        B64.decode(signature)
            .is_ok_and(|tag| hmac::verify(&self.key, &Self::framed(kind, parts), &tag).is_ok())
    }

    /// Whether a request made at `at_ms` with `signature` (already
    /// verified) is new: within [`FRESH_FOR`] of now and not seen before.
    pub(super) fn fresh(&self, signature: &str, at_ms: i64) -> bool {
        let now = now_ms();
        let window = i64::try_from(FRESH_FOR.as_millis()).unwrap_or(i64::MAX);
        if (now - at_ms).abs() > window {
            return false;
        }
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Whatever is older than the window is refused by its time alone.
        seen.retain(|_, at| (now - *at).abs() <= window);
        seen.insert(signature.to_owned(), at_ms).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::{Kind, Seal, now_ms};

    #[test]
    fn a_signature_holds_for_its_own_message_kind_and_secret_only() {
        let seal = Seal::new("s1");
        let sig = seal.sign(Kind::Call, &[b"subject", b"body"]);
        assert!(seal.verify(Kind::Call, &[b"subject", b"body"], &sig));
        assert!(!seal.verify(Kind::Answer, &[b"subject", b"body"], &sig));
        assert!(!seal.verify(Kind::Call, &[b"subject", b"body2"], &sig));
        // The same bytes split otherwise are another message.
        assert!(!seal.verify(Kind::Call, &[b"subjectb", b"ody"], &sig));
        assert!(!Seal::new("s2").verify(Kind::Call, &[b"subject", b"body"], &sig));
        assert!(!seal.verify(Kind::Call, &[b"subject", b"body"], "not base64!"));
    }

    #[test]
    fn a_request_is_taken_once_and_only_while_fresh() {
        let seal = Seal::new("s");
        let now = now_ms();
        assert!(seal.fresh("a", now));
        assert!(!seal.fresh("a", now), "a replay");
        assert!(seal.fresh("b", now - 1_000));
        assert!(!seal.fresh("c", now - 61_000), "too old");
        assert!(!seal.fresh("d", now + 61_000), "from the future");
    }
}
