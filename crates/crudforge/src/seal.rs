//! Opaque values the API hands out: random tokens, and sealed values it reads back unchanged
//! (list cursors, sign-in tickets):
//! `base64url(nonce || XChaCha20-Poly1305(key, nonce, message, associated data))`, the key
//! derived from the API's signing key with HKDF-SHA256 under a label of each use's own, so
//! that no two uses (nor the tokens' signatures) share a key.

use crate::error::Error;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use sha2::Sha256;

/// A new token of 256 random bits, URL-safe (base64url, 43 characters).
///
/// # Errors
///
/// 500 when no randomness can be had.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) fn random_token() -> Result<String, Error> {
    let mut raw = [0_u8; 32];
    getrandom::fill(&mut raw).map_err(|e| Error::Internal(format!("randomness: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(raw))
}

/// The length of the random nonce that opens every sealed value.
pub(crate) const NONCE: usize = 24;

/// The length of the Poly1305 tag that closes every sealed value.
pub(crate) const TAG: usize = 16;

/// The cipher of `label`'s values for the API whose signing key is `key`: HKDF-SHA256 of
/// the signing key under `label`. Derived once per signing key and label and kept (a list
/// with a next page seals a cursor, and the derivation is two HMACs); the copy of the signing
/// key it is kept under is wiped when another key replaces it.
pub(crate) fn cipher(key: &[u8], label: &'static [u8]) -> Result<XChaCha20Poly1305, Error> {
    type Kept = Vec<(
        &'static [u8],
        zeroize::Zeroizing<Vec<u8>>,
        XChaCha20Poly1305,
    )>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(Vec::new());
    let mut kept = KEPT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, _, c)) = kept
        .iter()
        .find(|(l, k, _)| *l == label && k.as_slice() == key)
    {
        return Ok(c.clone());
    }
    let c = derive(key, label)?;
    kept.retain(|(l, _, _)| *l != label);
    kept.push((label, zeroize::Zeroizing::new(key.to_vec()), c.clone()));
    Ok(c)
}

/// [`cipher`], derived.
pub(crate) fn derive(key: &[u8], label: &[u8]) -> Result<XChaCha20Poly1305, Error> {
    let mut derived = zeroize::Zeroizing::new([0u8; 32]);
    hkdf::Hkdf::<Sha256>::new(None, key)
        .expand(label, &mut derived[..])
        .map_err(|_| Error::Internal("a sealing key cannot be derived".into()))?;
    XChaCha20Poly1305::new_from_slice(&derived[..])
        .map_err(|_| Error::Internal("a sealing key has the wrong length".into()))
}

/// `message` sealed under `label` with associated data `ad`, as URL-safe text.
///
/// # Errors
///
/// 500 when no random nonce can be had or the key cannot be derived.
pub(crate) fn seal(
    key: &[u8],
    label: &'static [u8],
    ad: &[u8],
    message: &[u8],
) -> Result<String, Error> {
    let mut nonce = [0u8; NONCE];
    getrandom::fill(&mut nonce)
        .map_err(|e| Error::Internal(format!("no random nonce to seal a value: {e}")))?;
    let sealed = cipher(key, label)?
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: message,
                aad: ad,
            },
        )
        .map_err(|_| Error::Internal("a value cannot be sealed".into()))?;
    Ok(URL_SAFE_NO_PAD.encode([&nonce[..], &sealed].concat()))
}

/// The message of `text`, sealed by [`seal`] with the same key, label and `ad`; `Ok(None)`
/// when it is not such a value (malformed, truncated, edited, forged, or sealed for another
/// use).
///
/// # Errors
///
/// 500 when the key cannot be derived.
pub(crate) fn open(
    key: &[u8],
    label: &'static [u8],
    ad: &[u8],
    text: &str,
) -> Result<Option<Vec<u8>>, Error> {
    let Ok(raw) = URL_SAFE_NO_PAD.decode(text) else {
        return Ok(None);
    };
    if raw.len() < NONCE + TAG {
        return Ok(None);
    }
    let (nonce, sealed) = raw.split_at(NONCE);
    Ok(cipher(key, label)?
        .decrypt(
            XNonce::from_slice(nonce),
            Payload {
                msg: sealed,
                aad: ad,
            },
        )
        .ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_opens_only_with_its_key_label_and_data() {
        let key = [7u8; 32];
        let t = seal(&key, b"one", b"ad", b"hello").unwrap();
        assert_eq!(
            open(&key, b"one", b"ad", &t).unwrap().as_deref(),
            Some(&b"hello"[..])
        );
        assert_eq!(open(&key, b"two", b"ad", &t).unwrap(), None);
        assert_eq!(open(&key, b"one", b"other", &t).unwrap(), None);
        assert_eq!(open(&[8u8; 32], b"one", b"ad", &t).unwrap(), None);
        let mut edited = t.into_bytes();
        edited[30] = if edited[30] == b'A' { b'B' } else { b'A' };
        let edited = String::from_utf8(edited).unwrap();
        assert_eq!(open(&key, b"one", b"ad", &edited).unwrap(), None);
        assert_eq!(open(&key, b"one", b"ad", "!!").unwrap(), None);
    }
}
