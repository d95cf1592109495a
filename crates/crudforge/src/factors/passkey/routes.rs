//! The passkey routes beside every user blueprint: `me/factors/passkey/` begins a
//! registration and `me/factors/passkey/{factor_id}/` finishes it; `factors/passkey/challenge/`
//! begins a sign-in's ceremony (after a password, with the challenge's ticket; alone, without)
//! and `factors/passkey/verify/` checks the authenticator's answer for tokens at assurance
//! level 2.

use super::ceremony::Ceremony;
use super::Relying;
use crate::auth::throttle::{Account, Attempt};
use crate::crud::CustomRoute;
use crate::error::Error;
use crate::factors::routes::{
    bad_ticket, confirmed_now, enroller, factor_id, label_of, ticket_user, Confirmed, EnrollBody,
    ENROLLERS, SECOND_FACTOR,
};
use crate::factors::store;
use crate::factors::ticket::Purpose;
use crate::state::ApiState;
use crate::users::session::{admitted, issue_tokens_at, Entry};
use crate::users::{Accounts, LoginResponse};
use actix_web::{web, HttpRequest, HttpResponse};
use apistos::paths::OperationType;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use webauthn_rs::prelude::{
    DiscoverableAuthentication, Passkey, PasskeyAuthentication, PasskeyRegistration,
    PublicKeyCredential, RegisterPublicKeyCredential,
};

/// `me/factors/passkey/`'s answer: the options for the browser's
/// `navigator.credentials.create`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Registering {
    /// The new factor's id, to finish with.
    id: Uuid,
    /// The `publicKey` options, in WebAuthn's JSON (`PublicKeyCredential.parseCreationOptionsFromJSON`).
    public_key: serde_json::Map<String, serde_json::Value>,
}

/// `me/factors/passkey/{factor_id}/`'s body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RegisterBody {
    /// The credential the browser made, in WebAuthn's JSON (`credential.toJSON()`).
    credential: serde_json::Map<String, serde_json::Value>,
    /// As for `me/factors/totp/`: the enrollment ticket, instead of an access token.
    #[serde(default)]
    factor_ticket: Option<String>,
}

/// `factors/passkey/challenge/`'s body.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChallengeBody {
    /// The ticket of a sign-in's challenge, for a passkey as its second factor; none for a
    /// sign-in by a passkey alone.
    #[serde(default)]
    factor_ticket: Option<String>,
}

/// `factors/passkey/challenge/`'s answer: the options for `navigator.credentials.get`, and
/// the ticket that carries the ceremony to `factors/passkey/verify/`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Challenged {
    /// The ceremony's ticket: sent back once, within `expires_in` seconds.
    passkey_ticket: String,
    /// The `publicKey` options, in WebAuthn's JSON (`PublicKeyCredential.parseRequestOptionsFromJSON`).
    public_key: serde_json::Map<String, serde_json::Value>,
    /// Seconds until the ticket expires.
    expires_in: i64,
}

/// `factors/passkey/verify/`'s body.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PasskeyVerifyBody {
    /// The ceremony's ticket (`factors/passkey/challenge/`).
    passkey_ticket: String,
    /// The assertion the browser gave, in WebAuthn's JSON (`credential.toJSON()`).
    credential: serde_json::Map<String, serde_json::Value>,
}

/// The passkey routes beside the user blueprint `face`. They go before the factors' own, whose
/// `me/factors/{factor_id}/` would take `me/factors/passkey/`.
pub(crate) fn routes(face: &Accounts) -> Vec<CustomRoute> {
    let (model, tag) = (face.name, face.tag.as_str());
    vec![
        CustomRoute::new(OperationType::Post, "me/factors/passkey/", || {
            web::post().to(|req: HttpRequest, body: crate::Json<EnrollBody>| async move {
                register(req, body.into_inner()).await
            })
        })
        .operation_id(&format!("register{model}Passkey"))
        .summary("Begin registering a passkey: the options for the browser to make it with")
        .body::<EnrollBody>()
        .responds::<Registering>()
        .status(201)
        .errors(&[401, 403, 422])
        .tag(tag)
        .callers(ENROLLERS)
        .public(),
        CustomRoute::new(OperationType::Post, "me/factors/passkey/{factor_id}/", || {
            web::post().to(
                |req: HttpRequest, id: web::Path<String>, body: crate::Json<RegisterBody>| async move {
                    finish(req, &id, body.into_inner()).await
                },
            )
        })
        .operation_id(&format!("finish{model}Passkey"))
        .summary("Finish registering a passkey with the browser's credential: new tokens, and recovery codes for a first factor")
        .body::<RegisterBody>()
        .responds::<Confirmed>()
        .errors(&[401, 404, 409, 422, 429])
        .tag(tag)
        .callers(ENROLLERS)
        .public(),
        CustomRoute::new(OperationType::Post, "factors/passkey/challenge/", || {
            web::post().to(|req: HttpRequest, body: crate::Json<ChallengeBody>| async move {
                challenge(req, body.into_inner()).await
            })
        })
        .operation_id(&format!("challenge{model}Passkey"))
        .summary("Begin a passkey sign-in: after a password with the challenge's ticket, or alone")
        .body::<ChallengeBody>()
        .responds::<Challenged>()
        .errors(&[401, 409, 422])
        .tag(tag)
        .public(),
        CustomRoute::new(OperationType::Post, "factors/passkey/verify/", || {
            web::post().to(|req: HttpRequest, body: crate::Json<PasskeyVerifyBody>| async move {
                verify(req, body.into_inner()).await
            })
        })
        .operation_id(&format!("verify{model}Passkey"))
        .summary("Finish a passkey sign-in with the browser's assertion: tokens at assurance level 2")
        .body::<PasskeyVerifyBody>()
        .responds::<LoginResponse>()
        .errors(&[401, 403, 422, 429])
        .tag(tag)
        .public(),
    ]
}

/// The relying party, or 404 when passkeys are off (the routes are then not served at all).
fn relying(st: &ApiState) -> Result<&Relying, Error> {
    Relying::of(st)
        .map(|r| &**r)
        .ok_or_else(|| Error::NotFound("Passkeys are not set up on this server.".into()))
}

/// A JSON value of ours as the type `webauthn-rs` reads, or an internal error.
fn ours<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, Error> {
    serde_json::from_value(value).map_err(|e| Error::Internal(format!("passkey state: {e}")))
}

/// The client's credential as `T`, or 422 naming the member.
fn theirs<T: serde::de::DeserializeOwned>(
    credential: serde_json::Map<String, serde_json::Value>,
) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::Object(credential)).map_err(|_| {
        Error::invalid_field(
            "credential",
            "is not a WebAuthn credential in its JSON form (credential.toJSON())",
        )
    })
}

/// The `publicKey` member of `options` serialized.
fn public_key(
    options: &impl Serialize,
) -> Result<serde_json::Map<String, serde_json::Value>, Error> {
    let value = serde_json::to_value(options).map_err(|e| Error::Internal(e.to_string()))?;
    match value.get("publicKey") {
        Some(serde_json::Value::Object(map)) => Ok(map.clone()),
        _ => Err(Error::Internal("passkey options without publicKey".into())),
    }
}

/// A credential id as stored: base64url without padding.
fn credential_id(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A stored passkey (its JSON).
fn passkey_of(secret: &str) -> Result<Passkey, Error> {
    serde_json::from_str(secret).map_err(|e| Error::Internal(format!("stored passkey: {e}")))
}

/// A passkey as stored.
fn stored(passkey: &Passkey) -> Result<String, Error> {
    serde_json::to_string(passkey).map_err(|e| Error::Internal(e.to_string()))
}

fn bad_passkey() -> Error {
    Error::Unauthorized("The passkey's answer did not check out, or was already used.".into())
}

/// `POST me/factors/passkey/`.
async fn register(req: HttpRequest, body: EnrollBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let rp = relying(st)?;
    let user = enroller(&req, body.factor_ticket.as_deref()).await?;
    let label = label_of(body.label)?;
    let email = crate::auth::load_user(&st.db, user)
        .await?
        .map(|u| u.email)
        .unwrap_or_default();
    let mut conn = st.db.get().await?;
    let mut exclude = Vec::new();
    for factor in store::confirmed(&mut conn, user, "passkey").await? {
        exclude.push(passkey_of(&factor.secret)?.cred_id().clone());
    }
    let (options, state) = rp
        .webauthn
        .start_passkey_registration(user, &email, &email, Some(exclude))
        .map_err(|e| Error::Internal(format!("passkey registration: {e}")))?;
    let mut public_key = public_key(&options)?;
    // A passkey the browser keeps with the account (discoverable) can sign in alone; an
    // authenticator that cannot keep one still makes a passkey good as a second factor.
    if let Some(serde_json::Value::Object(selection)) = public_key.get_mut("authenticatorSelection")
    {
        selection.insert("residentKey".into(), "preferred".into());
    }
    let state = serde_json::to_string(&state).map_err(|e| Error::Internal(e.to_string()))?;
    let id = Uuid::new_v4();
    store::add(&mut conn, id, user, "passkey", label.as_deref(), &state).await?;
    Ok(HttpResponse::Created().json(Registering { id, public_key }))
}

/// `POST me/factors/passkey/{factor_id}/`.
async fn finish(req: HttpRequest, id: &str, body: RegisterBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let rp = relying(st)?;
    let id = factor_id(id)?;
    let user = enroller(&req, body.factor_ticket.as_deref()).await?;
    let credential: RegisterPublicKeyCredential = theirs(body.credential)?;
    let attempt = Attempt::begin(&req, Account::User(user)).await?;
    let confirmed = st
        .db
        .in_tx(async |conn| {
            let factor = store::factor(conn, user, id)
                .await?
                .filter(|f| f.kind == "passkey")
                .ok_or_else(|| Error::NotFound("No such passkey.".into()))?;
            if factor.confirmed {
                return Err(Error::Conflict(
                    "This passkey is already registered.".into(),
                ));
            }
            let state: PasskeyRegistration = ours(
                serde_json::from_str(&factor.secret).map_err(|e| Error::Internal(e.to_string()))?,
            )?;
            let Ok(passkey) = rp.webauthn.finish_passkey_registration(&credential, &state) else {
                return Ok(None);
            };
            let cred = credential_id(passkey.cred_id().as_slice());
            if store::credential_taken(conn, &cred).await? {
                return Err(Error::Conflict(
                    "This passkey is registered already.".into(),
                ));
            }
            let first = store::count_confirmed(conn, user).await? == 0;
            store::confirm_passkey(conn, id, &cred, &stored(&passkey)?).await?;
            confirmed_now(st, conn, user, first).await.map(Some)
        })
        .await?;
    let Some(confirmed) = confirmed else {
        return Err(bad_passkey());
    };
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(confirmed))
}

/// `POST factors/passkey/challenge/`.
async fn challenge(req: HttpRequest, body: ChallengeBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let rp = relying(st)?;
    let ceremony = match body.factor_ticket.as_deref() {
        Some(text) => {
            let user = ticket_user(st, text, Purpose::Verify)
                .await?
                .ok_or_else(bad_ticket)?;
            let mut conn = st.db.get().await?;
            let mut passkeys = Vec::new();
            for factor in store::confirmed(&mut conn, user, "passkey").await? {
                passkeys.push(passkey_of(&factor.secret)?);
            }
            if passkeys.is_empty() {
                return Err(Error::Conflict(
                    "This account has no passkey: give another of its factors.".into(),
                ));
            }
            let (options, state) = rp
                .webauthn
                .start_passkey_authentication(&passkeys)
                .map_err(|e| Error::Internal(format!("passkey challenge: {e}")))?;
            let version = crate::users::tokens::token_version_in(&mut conn, user).await?;
            (
                Ceremony::new(Some(user), version, &state)?,
                public_key(&options)?,
            )
        }
        None => {
            let (options, state) = rp
                .webauthn
                .start_discoverable_authentication()
                .map_err(|e| Error::Internal(format!("passkey challenge: {e}")))?;
            (Ceremony::new(None, 0, &state)?, public_key(&options)?)
        }
    };
    let (ceremony, public_key) = ceremony;
    Ok(HttpResponse::Ok().json(Challenged {
        passkey_ticket: ceremony.seal(st.signing_key.expose())?,
        public_key,
        expires_in: super::ceremony::SECONDS,
    }))
}

/// `POST factors/passkey/verify/`.
async fn verify(req: HttpRequest, body: PasskeyVerifyBody) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let rp = relying(st)?;
    let now = chrono::Utc::now().timestamp();
    let ceremony = Ceremony::open(st.signing_key.expose(), &body.passkey_ticket, now)?;
    let credential: PublicKeyCredential = theirs(body.credential)?;
    let Some(ceremony) = ceremony else {
        return Err(bad_ticket());
    };
    // The account: the ceremony's, or the one the passkey names (a sign-in by it alone).
    let named = credential_id(credential.get_credential_id());
    let found = {
        let mut conn = st.db.get().await?;
        store::by_credential(&mut conn, &named).await?
    };
    let user = match ceremony.user {
        Some(user) => user,
        None => rp
            .webauthn
            .identify_discoverable_authentication(&credential)
            .ok()
            .map(|(user, _)| user)
            .filter(|u| found.as_ref().is_some_and(|(owner, _)| owner == u))
            .ok_or_else(bad_passkey)?,
    };
    let attempt = Attempt::begin(&req, Account::User(user)).await?;
    let Some((owner, mut factor)) = found.filter(|(owner, _)| *owner == user) else {
        return Err(bad_passkey());
    };
    // The account is enabled and, after a password, its credentials unchanged since.
    let Some((account, version)) = crate::auth::load_session(&st.db, owner).await? else {
        return Err(bad_passkey());
    };
    if !account.is_enabled || (ceremony.user.is_some() && version != ceremony.version) {
        return Err(bad_ticket());
    }
    let mut passkey = passkey_of(&factor.secret)?;
    let checked = match ceremony.user {
        Some(_) => {
            let state: PasskeyAuthentication = ours(ceremony.state)?;
            rp.webauthn
                .finish_passkey_authentication(&credential, &state)
        }
        None => {
            let state: DiscoverableAuthentication = ours(ceremony.state)?;
            rp.webauthn
                .finish_discoverable_authentication_v2(&credential, state, &passkey)
        }
    };
    let Ok(result) = checked else {
        return Err(bad_passkey());
    };
    if result.cred_id() != passkey.cred_id() {
        return Err(bad_passkey());
    }
    if ceremony.user.is_none() {
        // A sign-in by a passkey alone passes the other surfaces' checks (an address
        // verified first); it is itself the second factor.
        admitted(
            st,
            user,
            Entry::SignIn {
                second_factor: true,
            },
        )
        .await?;
    }
    passkey.update_credential(&result);
    factor.secret = stored(&passkey)?;
    let tokens = st
        .db
        .in_tx(async |conn| {
            if !crate::spent::spend(conn, &ceremony.id, ceremony.expires).await? {
                return Ok(None);
            }
            store::used_passkey(conn, factor.id, &factor.secret).await?;
            issue_tokens_at(st, conn, user, SECOND_FACTOR)
                .await
                .map(Some)
        })
        .await?;
    let Some(tokens) = tokens else {
        return Err(bad_passkey());
    };
    attempt.succeeded().await?;
    Ok(HttpResponse::Ok().json(tokens))
}
