//! The signature of a message, as Standard Webhooks 1.0 sets it: `webhook-id`,
//! `webhook-timestamp` and `webhook-signature`, an HMAC-SHA256 of `id.timestamp.body` under
//! each of the subscription's secrets (two while one replaces the other), base64-encoded.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The prefix of a secret in its written form.
const PREFIX: &str = "whsec_";

/// Fewest bytes a secret holds.
const MIN_SECRET_BYTES: usize = 24;

/// A subscription's signing secret.
#[derive(Clone)]
pub(crate) struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// A secret from its written form, `whsec_` and base64 of at least 24 bytes.
    ///
    /// # Errors
    ///
    /// A message saying what is wrong with it (never the secret).
    pub(crate) fn parse(text: &str) -> Result<Secret, String> {
        let b64 = text
            .trim()
            .strip_prefix(PREFIX)
            .ok_or_else(|| format!("a secret starts with `{PREFIX}`"))?;
        let bytes = STANDARD
            .decode(b64)
            .map_err(|_| "a secret is `whsec_` and base64".to_owned())?;
        if bytes.len() < MIN_SECRET_BYTES {
            return Err(format!(
                "a secret holds at least {MIN_SECRET_BYTES} bytes (it has {})",
                bytes.len()
            ));
        }
        Ok(Secret(bytes))
    }
}

/// The three headers of a message: its id, the time of this attempt (seconds since 1970),
/// and one `v1,<signature>` per secret, separated by spaces.
pub(crate) fn headers(
    secrets: &[Secret],
    id: &str,
    timestamp: i64,
    body: &[u8],
) -> [(&'static str, String); 3] {
    let signatures: Vec<String> = secrets
        .iter()
        .map(|s| format!("v1,{}", signature(s, id, timestamp, body)))
        .collect();
    [
        ("webhook-id", id.to_owned()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signatures.join(" ")),
    ]
}

/// The base64 HMAC-SHA256 of `id.timestamp.body` under `secret`.
fn signature(secret: &Secret, id: &str, timestamp: i64, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&secret.0) else {
        unreachable!("HMAC takes a key of any length")
    };
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_whsec_and_base64_of_enough_bytes() {
        assert!(Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_ok());
        assert!(Secret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").is_err());
        assert!(Secret::parse("whsec_not base64!").is_err());
        assert!(Secret::parse("whsec_c2hvcnQ=").is_err());
        assert_eq!(
            format!(
                "{:?}",
                Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
            ),
            "Ok(Secret(..))"
        );
    }

    /// The example the specification's repository signs (its secret, id, time and body).
    #[test]
    fn the_signature_matches_the_specifications_example() {
        let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let body = br#"{"test": 2432232314}"#;
        let [id, ts, sig] = headers(
            &[secret.clone(), secret],
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1_614_265_330,
            body,
        );
        assert_eq!(id.1, "msg_p5jXN8AQM9LWM0D4loKWxJek");
        assert_eq!(ts.1, "1614265330");
        let one = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
        assert_eq!(sig.1, format!("{one} {one}"));
    }
}
