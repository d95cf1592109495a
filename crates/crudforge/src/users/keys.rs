//! API keys: the check of a new key's scopes against the resources the API mounts, and the
//! exchange of a key for an access token that carries its scope, ends no later than the key,
//! and records the key's last use.
//!
//! The scopes' grammar and the check of each request are `auth::key_scope`'s; this module is
//! what the user system adds around the Token records.

use super::model::Token;
use super::rules::TokenRules;
use super::session::{LoginContext, LoginHook};
use super::tokens::{mark_key_used, token_version, usable_key};
use crate::auth::key_scope::{KeyScope, Resources};
use crate::auth::throttle::{Account, Attempt};
use crate::auth::{load_user, CurrentUser};
use crate::crud::{CrudBlueprint, HookCtx, Resource};
use crate::error::Error;
use crate::perms::{Access, OwnerRules, Rules};
use crate::state::ApiState;
use actix_web::HttpRequest;
use serde::{Deserialize, Serialize};
use std::any::Any;
use uuid::Uuid;

/// The member of a Token record that holds a key's scopes.
const SCOPES: &str = "scopes";

/// What a blueprint of [`Token`] gets when it is mounted (`Rules::on_mount` of
/// [`TokenRules`](super::TokenRules)): a last `before_create` hook that checks a new key's
/// `scopes` against the resources the API mounts and stores them in one form (entries once
/// each, one space between them); a scope it refuses is 422 naming `scopes`, and nothing is
/// stored.
pub(crate) fn check_scopes_on_mount(bp: &mut dyn Any) {
    let Some(bp) = bp.downcast_mut::<CrudBlueprint<Token>>() else {
        return;
    };
    // Last, so that it judges what the application's own hooks leave.
    let taken = std::mem::replace(bp, CrudBlueprint::new("/"));
    *bp = taken.before_create(
        |ctx: HookCtx, mut input: <Token as Resource>::Create| async move {
            if let Some(text) = input.scopes.take() {
                let checked = match &ctx.resources {
                    Some(resources) => resources.check(SCOPES, &text)?,
                    None => Resources::default().check(SCOPES, &text)?,
                };
                input.scopes = Some(checked);
            }
            Ok(input)
        },
    );
}

impl<R> Rules<R> for TokenRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        <OwnerRules as Rules<R>>::read(&OwnerRules::USER_ID, user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        <OwnerRules as Rules<R>>::write(&OwnerRules::USER_ID, user)
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), Error> {
        <OwnerRules as Rules<R>>::create(&OwnerRules::USER_ID, user, body)
    }
    fn server_fields(&self) -> &[&'static str] {
        <OwnerRules as Rules<R>>::server_fields(&OwnerRules::USER_ID)
    }
    fn on_mount(&self) -> Option<fn(&mut dyn Any)> {
        Some(check_scopes_on_mount)
    }
}

/// An access token an API key was exchanged for ([`exchange_api_key`]).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiKeyAccess {
    /// Access token for `Authorization: Bearer`. It carries the key's scope, if any.
    pub access_token: String,
    /// Always `bearer`.
    pub token_type: String,
    /// Seconds the access token lives: `JWT_ACCESS_TOKEN_EXPIRES`, or fewer when the key
    /// expires sooner (the token never outlives the key).
    pub expires_in: i64,
    /// What the key (and so the token) is limited to, entries separated by spaces; null: the
    /// owner's full access.
    pub scopes: Option<String>,
    /// The key's owner.
    pub user_id: Uuid,
}

/// The refusal of a key that is unknown, revoked or expired: one answer for all three.
fn invalid_key() -> Error {
    Error::Unauthorized("invalid token".into())
}

/// Exchanges the API key `key` (a Token record of kind `api_key`, as stored through the Token
/// resource or the command line) for an access token of its owner, for an application's own
/// token-login route:
///
/// 1. throttled by client address (an unknown, revoked or expired key counts as a failure of
///    the address, a disabled owner also as one of the owner's account; 429 past the limits);
/// 2. the key must be usable (401 `invalid token` otherwise, the same for an unknown, a
///    revoked and an expired key) and its owner enabled (401);
/// 3. `hook`, with `domain`, may refuse (for example a domain the owner has no access to);
/// 4. the access token is issued at the owner's credential version (a password change or a
///    logout everywhere ends it), carries the key's scope (every request made with it is
///    judged against the scope before the rules), and expires after
///    `JWT_ACCESS_TOKEN_EXPIRES` or at the key's expiry, whichever comes first;
/// 5. the key's `last_used_at` is set (only here: requests made with the access token do not
///    write it).
///
/// See [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md) ("Scoped API keys").
///
/// # Errors
///
/// 401, 429, the hook's refusal, database errors.
pub async fn exchange_api_key(
    req: &HttpRequest,
    key: &str,
    domain: Option<&str>,
    hook: Option<&dyn LoginHook>,
) -> Result<ApiKeyAccess, Error> {
    let st = ApiState::of(req)?;
    // Throttled by client address first; a failure below stays counted (see auth::throttle).
    let attempt = Attempt::begin(req, Account::Unknown).await?;
    let found = usable_key(&st.db, key).await?.ok_or_else(invalid_key)?;
    let Some(user) = load_user(&st.db, found.user_id)
        .await?
        .filter(|u| u.is_enabled)
    else {
        attempt.failed_for(Account::User(found.user_id)).await?;
        return Err(Error::Unauthorized(
            "The token's owner cannot log in.".into(),
        ));
    };
    attempt.succeeded().await?;
    if let Some(h) = hook {
        let ctx = LoginContext {
            user: &user,
            domain,
            db: &st.db,
            request: req,
        };
        h.validate(&ctx).await?;
    }
    // A scope stored by other means than the Token resource (its own SQL) is read the same
    // way; one that does not parse makes the key unusable rather than unlimited.
    let scopes = match &found.scopes {
        None => None,
        Some(text) => match KeyScope::parse(text) {
            Ok(scope) => Some(scope.text()),
            Err(why) => {
                tracing::warn!(key = %found.id, %why, "an API key's stored scopes cannot be read; the key is refused");
                return Err(invalid_key());
            }
        },
    };
    let version = token_version(&st.db, user.id).await?;
    let not_after = found.expires_at.map(|e| e.timestamp());
    let (access_token, claims) =
        st.tokens
            .issue_for_key(user.id, version, not_after, scopes.clone())?;
    // Recorded only while the key is still usable: a revocation in between wins.
    if !mark_key_used(&st.db, found.id).await? {
        return Err(invalid_key());
    }
    Ok(ApiKeyAccess {
        access_token,
        token_type: "bearer".to_owned(),
        expires_in: claims.exp.saturating_sub(claims.iat),
        scopes,
        user_id: user.id,
    })
}
