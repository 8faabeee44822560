//! Checks a GitHub App JWT the way GitHub does: RS256 signature against the
//! app's public key, `iss` naming the app, `exp` in the future but at most
//! ten minutes away.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rustls_pki_types::SubjectPublicKeyInfoDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value;
use webpki::RawPublicKeyEntity;

/// GitHub refuses an `exp` further away than this.
const MAX_LIFETIME_SECS: i64 = 10 * 60;
/// Clock drift tolerated on `iat`, as GitHub recommends backdating by 60 s.
const SKEW_SECS: i64 = 60;
/// GitHub's answer to a token it cannot read or whose signature is wrong.
const UNDECODABLE: &str = "A JSON web token could not be decoded";

/// The app GitHub knows: its id and public key.
pub(super) struct AppVerifier {
    app_id: i64,
    spki: SubjectPublicKeyInfoDer<'static>,
}

impl AppVerifier {
    /// `public_key_pem` is an SPKI PEM (`BEGIN PUBLIC KEY`, what
    /// `openssl rsa -pubout` writes).
    pub(super) fn new(app_id: i64, public_key_pem: &str) -> Result<Self, String> {
        let spki = SubjectPublicKeyInfoDer::from_pem_slice(public_key_pem.as_bytes())
            .map_err(|e| format!("the app's public key is not an SPKI PEM: {e}"))?;
        RawPublicKeyEntity::try_from(&spki)
            .map_err(|e| format!("the app's public key is not a public key: {e}"))?;
        Ok(AppVerifier { app_id, spki })
    }

    /// `Ok` for a JWT this app signed that is valid at `now` (Unix seconds),
    /// else GitHub's message for why not.
    pub(super) fn verify(&self, jwt: &str, now: i64) -> Result<(), &'static str> {
        // `header.claims` is what was signed.
        let (signed, signature) = jwt.rsplit_once('.').ok_or(UNDECODABLE)?;
        let (header, claims) = signed.split_once('.').ok_or(UNDECODABLE)?;
        let header = decode_json(header).ok_or(UNDECODABLE)?;
        if header["alg"] != "RS256" {
            return Err(UNDECODABLE);
        }
        let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| UNDECODABLE)?;
        let key = RawPublicKeyEntity::try_from(&self.spki).map_err(|_| UNDECODABLE)?;
        key.verify_signature(
            webpki::ring::RSA_PKCS1_2048_8192_SHA256,
            signed.as_bytes(),
            &signature,
        )
        .map_err(|_| UNDECODABLE)?;

        let claims = decode_json(claims).ok_or(UNDECODABLE)?;
        if !self.is_issuer(&claims["iss"]) {
            return Err("Integration not found");
        }
        let (Some(iat), Some(exp)) = (claims["iat"].as_i64(), claims["exp"].as_i64()) else {
            return Err("'Issued at' and 'Expiration time' claims must be integers");
        };
        if iat > now + SKEW_SECS {
            return Err(
                "'Issued at' claim ('iat') must be an Integer representing a time in the past",
            );
        }
        if exp <= now {
            return Err(
                "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
            );
        }
        if exp > now + MAX_LIFETIME_SECS {
            return Err("'Expiration time' claim ('exp') is too far in the future");
        }
        Ok(())
    }

    /// GitHub takes the app id as a number or a string.
    fn is_issuer(&self, iss: &Value) -> bool {
        match iss {
            Value::Number(n) => n.as_i64() == Some(self.app_id),
            Value::String(s) => s.parse::<i64>().ok() == Some(self.app_id),
            _ => false,
        }
    }
}

fn decode_json(part: &str) -> Option<Value> {
    let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[cfg(test)]
mod tests {
    use ring::rand::SystemRandom;
    use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
    use rustls_pki_types::PrivatePkcs1KeyDer;
    use serde_json::json;

    use super::*;
    use crate::github::{APP_PRIVATE_KEY_PEM, APP_PUBLIC_KEY_PEM, STRANGER_PRIVATE_KEY_PEM};

    const NOW: i64 = 1_700_000_000;

    fn sign(key_pem: &str, header: &Value, claims: &Value) -> String {
        let der = PrivatePkcs1KeyDer::from_pem_slice(key_pem.as_bytes()).unwrap();
        let pair = RsaKeyPair::from_der(der.secret_pkcs1_der()).unwrap();
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let mut signature = vec![0; pair.public().modulus_len()];
        pair.sign(
            &RSA_PKCS1_SHA256,
            &SystemRandom::new(),
            signed.as_bytes(),
            &mut signature,
        )
        .unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    fn rs256() -> Value {
        json!({"alg": "RS256", "typ": "JWT"})
    }

    fn claims(iss: Value, iat: i64, exp: i64) -> Value {
        json!({"iss": iss, "iat": iat, "exp": exp})
    }

    fn verifier() -> AppVerifier {
        AppVerifier::new(42, APP_PUBLIC_KEY_PEM).unwrap()
    }

    #[test]
    fn the_apps_own_jwt_is_accepted_with_the_id_as_number_or_string() {
        for iss in [json!(42), json!("42")] {
            let jwt = sign(
                APP_PRIVATE_KEY_PEM,
                &rs256(),
                &claims(iss, NOW - 60, NOW + 540),
            );
            assert_eq!(verifier().verify(&jwt, NOW), Ok(()));
        }
    }

    #[test]
    fn another_key_or_a_tampered_token_is_refused() {
        let good = claims(json!(42), NOW - 60, NOW + 540);
        let stranger = sign(STRANGER_PRIVATE_KEY_PEM, &rs256(), &good);
        assert_eq!(verifier().verify(&stranger, NOW), Err(UNDECODABLE));

        let jwt = sign(APP_PRIVATE_KEY_PEM, &rs256(), &good);
        let (_, rest) = jwt.split_once('.').unwrap();
        let (_, signature) = rest.split_once('.').unwrap();
        let forged_claims = URL_SAFE_NO_PAD.encode(claims(json!(42), NOW, NOW + 3600).to_string());
        let header = URL_SAFE_NO_PAD.encode(rs256().to_string());
        let forged = format!("{header}.{forged_claims}.{signature}");
        assert_eq!(verifier().verify(&forged, NOW), Err(UNDECODABLE));

        let none = sign(APP_PRIVATE_KEY_PEM, &json!({"alg": "none"}), &good);
        assert_eq!(verifier().verify(&none, NOW), Err(UNDECODABLE));
        assert_eq!(verifier().verify("not.a-jwt", NOW), Err(UNDECODABLE));
    }

    #[test]
    fn the_claims_are_checked_like_github_does() {
        let verify =
            |claims: Value| verifier().verify(&sign(APP_PRIVATE_KEY_PEM, &rs256(), &claims), NOW);
        assert_eq!(
            verify(claims(json!(43), NOW - 60, NOW + 540)),
            Err("Integration not found")
        );
        assert!(
            verify(claims(json!(42), NOW - 600, NOW))
                .unwrap_err()
                .contains("'exp'")
        );
        assert!(
            verify(claims(json!(42), NOW, NOW + 601))
                .unwrap_err()
                .contains("too far in the future")
        );
        assert!(
            verify(claims(json!(42), NOW + 120, NOW + 540))
                .unwrap_err()
                .contains("'iat'")
        );
    }
}
