//! The app's RS256 JWT, which authenticates it to GitHub as itself
//! (`/app/*` endpoints). Signed with ring: constant-time RSA, already in the
//! tree through rustls.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls_pki_types::PrivateKeyDer;
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};

use super::GithubError;

/// Backdated to absorb clock drift between us and GitHub, as GitHub advises.
const BACKDATE_SECS: i64 = 60;
/// GitHub refuses JWTs living longer than 10 minutes; stay under it.
const LIFETIME_SECS: i64 = 9 * 60;

/// The app's private key, ready to sign.
pub(super) struct AppKey {
    pair: RsaKeyPair,
    rng: SystemRandom,
}

impl AppKey {
    /// Reads a PEM RSA key: PKCS#1 (`BEGIN RSA PRIVATE KEY`, as GitHub hands
    /// it out) or PKCS#8 (`BEGIN PRIVATE KEY`).
    pub(super) fn from_pem(pem: &str) -> Result<AppKey, GithubError> {
        let der = PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| GithubError::BadKey(format!("no PEM private key found ({e})")))?;
        let pair = match &der {
            PrivateKeyDer::Pkcs1(key) => RsaKeyPair::from_der(key.secret_pkcs1_der()),
            PrivateKeyDer::Pkcs8(key) => RsaKeyPair::from_pkcs8(key.secret_pkcs8_der()),
            _ => {
                return Err(GithubError::BadKey(
                    "not an RSA key (expected BEGIN RSA PRIVATE KEY or BEGIN PRIVATE KEY)".into(),
                ));
            }
        }
        .map_err(|e| GithubError::BadKey(format!("not a usable RSA key: {e}")))?;
        Ok(AppKey {
            pair,
            rng: SystemRandom::new(),
        })
    }

    /// A JWT for app `app_id` valid from a minute before `now` (Unix
    /// seconds) for nine minutes.
    pub(super) fn jwt(&self, app_id: &str, now: i64) -> Result<String, GithubError> {
        let header = json!({"alg": "RS256", "typ": "JWT"});
        let claims = json!({
            "iat": now - BACKDATE_SECS,
            "exp": now + LIFETIME_SECS,
            "iss": issuer(app_id),
        });
        let signed = format!("{}.{}", encode(&header), encode(&claims));
        let mut signature = vec![0; self.pair.public().modulus_len()];
        self.pair
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                signed.as_bytes(),
                &mut signature,
            )
            .map_err(|_| GithubError::BadKey("RSA signing failed".into()))?;
        Ok(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// GitHub documents `iss` as the numeric app id or the app's client id
/// (`Iv1...`, a string): a number goes out as a JSON number.
fn issuer(app_id: &str) -> Value {
    match app_id.parse::<u64>() {
        Ok(id) => Value::from(id),
        Err(_) => Value::from(app_id),
    }
}

fn encode(part: &Value) -> String {
    URL_SAFE_NO_PAD.encode(part.to_string())
}

#[cfg(test)]
mod tests {
    use gantry_testkit::github::{APP_PRIVATE_KEY_PEM, APP_PRIVATE_KEY_PKCS8_PEM};
    use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

    use super::*;

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    #[test]
    fn the_jwt_carries_githubs_claims_and_a_valid_signature() {
        let key = AppKey::from_pem(APP_PRIVATE_KEY_PEM).unwrap();
        let jwt = key.jwt("42", 1_000_000).unwrap();
        let (signed, signature) = jwt.rsplit_once('.').unwrap();
        let (header, claims) = signed.split_once('.').unwrap();
        assert_eq!(decode(header), json!({"alg": "RS256", "typ": "JWT"}));
        assert_eq!(
            decode(claims),
            json!({"iat": 999_940, "exp": 1_000_540, "iss": 42})
        );
        let public = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, key.pair.public());
        let signature = URL_SAFE_NO_PAD.decode(signature).unwrap();
        assert!(public.verify(signed.as_bytes(), &signature).is_ok());
    }

    #[test]
    fn a_client_id_is_sent_as_a_string() {
        let key = AppKey::from_pem(APP_PRIVATE_KEY_PEM).unwrap();
        let jwt = key.jwt("Iv1.abc", 0).unwrap();
        let claims = jwt.split('.').nth(1).unwrap();
        assert_eq!(decode(claims)["iss"], "Iv1.abc");
    }

    #[test]
    fn pkcs1_and_pkcs8_forms_of_a_key_sign_alike() {
        let pkcs1 = AppKey::from_pem(APP_PRIVATE_KEY_PEM).unwrap();
        let pkcs8 = AppKey::from_pem(APP_PRIVATE_KEY_PKCS8_PEM).unwrap();
        // RSASSA-PKCS1-v1_5 is deterministic: same key, same JWT.
        assert_eq!(pkcs1.jwt("42", 7).unwrap(), pkcs8.jwt("42", 7).unwrap());
    }

    #[test]
    fn a_key_that_is_not_an_rsa_pem_is_refused_clearly() {
        let err = AppKey::from_pem("not a key").err().unwrap();
        assert!(matches!(err, GithubError::BadKey(_)), "{err}");
        assert!(err.to_string().contains("no PEM private key"), "{err}");

        // pki-types classifies sections without parsing them: any bytes do.
        let ec = "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n";
        let err = AppKey::from_pem(ec).err().unwrap();
        assert!(err.to_string().contains("not an RSA key"), "{err}");
    }
}
