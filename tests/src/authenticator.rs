//! A software authenticator for the passkey ceremonies: it makes a passkey when a page asks
//! (`navigator.credentials.create`) and signs with it (`navigator.credentials.get`), as a
//! browser with a platform authenticator would, user verification always given. The options
//! and the answers are WebAuthn's JSON, as the API sends and takes them.

use passkey::authenticator::{Authenticator, UiHint, UserCheck, UserValidationMethod};
use passkey::client::{Client, DefaultClientData};
use passkey::crypto::rust_crypto::RustCryptoBackend;
use passkey::types::ctap2::{Aaguid, Ctap2Error};
use passkey::types::webauthn::{CredentialCreationOptions, CredentialRequestOptions};
use passkey::types::Passkey;
use serde_json::{json, Value};
use url::Url;

/// The person at the authenticator: present, and verified (a PIN or a fingerprint).
struct Verified;

#[async_trait::async_trait]
impl UserValidationMethod for Verified {
    type PasskeyItem = Passkey;

    async fn check_user<'a>(
        &self,
        _hint: UiHint<'a, Passkey>,
        _presence: bool,
        _verification: bool,
    ) -> Result<UserCheck, Ctap2Error> {
        Ok(UserCheck {
            presence: true,
            verification: true,
        })
    }

    fn is_verification_enabled(&self) -> Option<bool> {
        Some(true)
    }

    fn is_presence_enabled(&self) -> bool {
        true
    }
}

/// An authenticator that holds at most one passkey, used from the page at `origin`.
pub struct SoftKey {
    origin: Url,
    store: Option<Passkey>,
}

impl SoftKey {
    /// An empty authenticator on the page at `origin` (`https://app.example.com`).
    ///
    /// # Panics
    ///
    /// When `origin` is not a URL.
    #[must_use]
    pub fn new(origin: &str) -> SoftKey {
        SoftKey {
            origin: Url::parse(origin).expect("an origin"),
            store: None,
        }
    }

    /// Whether it holds a passkey.
    #[must_use]
    pub fn holds_one(&self) -> bool {
        self.store.is_some()
    }

    /// The authenticator, holding what this one held.
    fn authenticator(&mut self) -> Authenticator<Option<Passkey>, Verified, RustCryptoBackend> {
        Authenticator::new(
            Aaguid::new_empty(),
            self.store.take(),
            Verified,
            RustCryptoBackend,
        )
    }

    /// Makes a passkey for the `publicKey` options `public_key` (an API's registration
    /// answer's `public_key`): the credential in WebAuthn's JSON.
    ///
    /// # Panics
    ///
    /// When the options do not parse or the authenticator refuses them.
    pub async fn create(&mut self, public_key: &Value) -> Value {
        let options: CredentialCreationOptions =
            serde_json::from_value(json!({ "publicKey": public_key })).expect("creation options");
        let mut client = Client::new(self.authenticator());
        let made = client
            .register(&self.origin, options, DefaultClientData)
            .await;
        self.store = client.authenticator().store().clone();
        let made = made.expect("the authenticator makes a passkey");
        serde_json::to_value(made).expect("JSON")
    }

    /// Signs the challenge of the `publicKey` options `public_key` (an API's challenge
    /// answer's `public_key`): the assertion in WebAuthn's JSON.
    ///
    /// # Panics
    ///
    /// When the options do not parse or the authenticator has no passkey for them.
    pub async fn get(&mut self, public_key: &Value) -> Value {
        let options: CredentialRequestOptions =
            serde_json::from_value(json!({ "publicKey": public_key })).expect("request options");
        let mut client = Client::new(self.authenticator());
        let signed = client
            .authenticate(&self.origin, options, DefaultClientData)
            .await;
        self.store = client.authenticator().store().clone();
        let signed = signed.expect("the authenticator signs");
        serde_json::to_value(signed).expect("JSON")
    }
}
