//! The current user of a request, from `Authorization: Bearer`, and the extractors that
//! require one ([`Auth`], [`MaybeAuth`], [`Admin`]).

use super::user::{CurrentUser, RoleGrant};
use crate::db::{Conn, Database};
use crate::error::Error;
use crate::jwt::TokenKind;
use crate::schema::{user_roles, users};
use crate::sql_types::Portable;
use crate::state::ApiState;
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpMessage, HttpRequest};
use diesel::prelude::*;
use futures_util::future::LocalBoxFuture;
use uuid::Uuid;

/// Outcome of reading the `Authorization` header, cached per request: the caller, or the
/// refusal (403 for a request outside an API key's scope, 401 otherwise) and its detail.
#[derive(Clone)]
struct Authenticated(Result<Option<CurrentUser>, (u16, String)>);

impl Authenticated {
    /// The cached outcome as the caller sees it.
    fn outcome(self) -> Result<Option<CurrentUser>, Error> {
        self.0.map_err(|(status, m)| match status {
            403 => Error::Forbidden(m.into()),
            _ => Error::Unauthorized(m.into()),
        })
    }
}

/// The caller, from `Authorization: Bearer <access token>`: `None` without the header.
/// Loads the user with its roles in one query and caches it for the request.
///
/// # Errors
///
/// 401 for a malformed header, an invalid, expired or non-access token, or a user that no
/// longer exists or is disabled; 403 for a token exchanged for an API key whose scope does
/// not allow the request (see [auth.md](https://github.com/crudforge/crudforge/blob/main/docs/auth.md), "Scoped API keys").
pub async fn current_user(req: &HttpRequest) -> Result<Option<CurrentUser>, Error> {
    current_user_with(req, None).await
}

/// Like [`current_user`], but the user is loaded on `conn`, the connection the request's own
/// statements run on (in the same read snapshot, see [`crate::db::snapshot`]), rather than on
/// a connection of its own.
///
/// # Errors
///
/// As [`current_user`].
pub(crate) async fn current_user_on(
    req: &HttpRequest,
    conn: &mut Conn,
) -> Result<Option<CurrentUser>, Error> {
    current_user_with(req, Some(conn)).await
}

async fn current_user_with(
    req: &HttpRequest,
    conn: Option<&mut Conn>,
) -> Result<Option<CurrentUser>, Error> {
    let cached = req.extensions().get::<Authenticated>().cloned();
    if let Some(cached) = cached {
        return cached.outcome();
    }
    if req
        .headers()
        .get(actix_web::http::header::AUTHORIZATION)
        .is_none()
    {
        return Ok(None);
    }
    // Awaited in place: dropping it midway (actix drops the other extractors when one fails)
    // is safe, since SQLite statements run to their end within one poll (db::runner) and
    // PostgreSQL queries are cancel-safe.
    let result = authenticate(req, conn).await;
    let cached = match &result {
        Ok(u) => Ok(u.clone()),
        Err(e @ Error::Forbidden(_)) => Err((403, e.to_string())),
        Err(e) => Err((401, e.to_string())),
    };
    req.extensions_mut().insert(Authenticated(cached));
    result
}

/// Like [`current_user`], but anonymous callers get 401.
///
/// # Errors
///
/// 401.
pub(crate) async fn require_user(req: &HttpRequest) -> Result<CurrentUser, Error> {
    current_user(req)
        .await?
        .ok_or_else(|| Error::Unauthorized("Authentication required.".into()))
}

/// The bearer token of `Authorization` (`None` without the header).
fn bearer(req: &HttpRequest) -> Result<Option<&str>, Error> {
    let Some(header) = req.headers().get(actix_web::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let value = header
        .to_str()
        .map_err(|_| Error::Unauthorized("Malformed Authorization header.".into()))?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Some)
        .ok_or_else(|| Error::Unauthorized("Expected `Authorization: Bearer <token>`.".into()))
}

/// The user id a request's access token names, when it carries one whose signature and times
/// hold, without reading the user (who may since have been disabled: [`current_user`] says
/// that). What a limit per caller counts by.
pub(crate) fn token_subject(req: &HttpRequest) -> Option<Uuid> {
    let token = bearer(req).ok().flatten()?;
    let st = ApiState::of(req).ok()?;
    let claims = st.tokens.verify(token, TokenKind::Access).ok()?;
    let sub = claims.sub;
    // The request's authentication takes them from here rather than verifying the token again.
    req.extensions_mut().insert(Verified(claims));
    Some(sub)
}

/// The claims of the request's access token, verified earlier in the request
/// ([`token_subject`]).
#[derive(Clone)]
struct Verified(crate::jwt::Claims);

async fn authenticate(
    req: &HttpRequest,
    conn: Option<&mut Conn>,
) -> Result<Option<CurrentUser>, Error> {
    let st = ApiState::of(req)?;
    let verified = req.extensions().get::<Verified>().map(|v| v.0.clone());
    let claims = match verified {
        Some(claims) => claims,
        None => {
            let Some(token) = bearer(req)? else {
                return Ok(None);
            };
            st.tokens.verify(token, TokenKind::Access)?
        }
    };
    let session = match conn {
        Some(conn) => session_on(conn, claims.sub).await?,
        None => load_session(&st.db, claims.sub).await?,
    };
    let (mut user, version) = session.filter(|(u, _)| u.is_enabled).ok_or_else(|| {
        Error::Unauthorized("The token's user does not exist or is disabled.".into())
    })?;
    // A token issued before the password changed, the account was disabled or the user
    // logged out everywhere carries an older credential version.
    if claims.ver.unwrap_or(0) != version {
        return Err(Error::Unauthorized(
            "This session has ended; log in again.".into(),
        ));
    }
    // A token an API key limited to scopes was exchanged for makes only the requests its
    // scope allows, judged here, before any handler's own rules (see `key_scope`).
    if let Some(scope) = &claims.scope {
        super::key_scope::admit(req, scope)?;
    }
    user.second_factor = claims.second_factor();
    Ok(Some(user))
}

/// Extractor for handlers that need a signed-in user (401 otherwise).
#[derive(Debug, Clone)]
pub struct Auth(pub CurrentUser);

impl FromRequest for Auth {
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { require_user(&req).await.map(Auth) })
    }
}

/// Extractor for handlers that accept anonymous callers but use the user when there is one
/// (an invalid token is still a 401).
#[derive(Debug, Clone)]
pub struct MaybeAuth(pub Option<CurrentUser>);

impl FromRequest for MaybeAuth {
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { current_user(&req).await.map(MaybeAuth) })
    }
}

/// Extractor for administrators (401 anonymous, 403 others).
#[derive(Debug, Clone)]
pub struct Admin(pub CurrentUser);

impl FromRequest for Admin {
    type Error = Error;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let u = require_user(&req).await?;
            if u.is_admin() {
                Ok(Admin(u))
            } else {
                Err(Error::Forbidden("Administrators only.".into()))
            }
        })
    }
}

/// The claims of the request's bearer access token, if it carries one (checked as
/// [`current_user`] checks it: signature, time, kind).
///
/// # Errors
///
/// 401 for a malformed header or an invalid token.
#[allow(
    dead_code,
    reason = "a door of the seam: the surfaces that hold a caller past one request (a feed, an export) judge the session again with it"
)]
pub(crate) fn bearer_claims(req: &HttpRequest) -> Result<Option<crate::jwt::Claims>, Error> {
    let Some(header) = req.headers().get(actix_web::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    let token = header
        .to_str()
        .ok()
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::Unauthorized("Expected `Authorization: Bearer <token>`.".into()))?;
    let st = ApiState::of(req)?;
    st.tokens.verify(token, TokenKind::Access).map(Some)
}

/// The user `id` if their session at credential version `version` still holds: `None` when
/// the user is gone or disabled, or logged out everywhere or changed their password since.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: the surfaces that hold a caller past one request (a feed, an export) judge the session again with it"
)]
pub(crate) async fn session_at(
    db: &Database,
    id: Uuid,
    version: i64,
) -> Result<Option<CurrentUser>, Error> {
    Ok(load_session(db, id)
        .await?
        .filter(|(u, v)| u.is_enabled && *v == version)
        .map(|(u, _)| u))
}

/// How a session judged earlier (a stream's, an export's) stands now.
#[allow(
    dead_code,
    reason = "a door of the seam: the surfaces that hold a caller past one request (a feed, an export) judge the session again with it"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// The same user, enabled, at the same credential version, with the same role grants.
    Holds,
    /// The user is gone or disabled, or logged out everywhere or changed their password.
    Ended,
    /// The session holds, but a role was granted or revoked since it was judged: what it
    /// was shown was judged for other rights.
    RightsChanged,
}

/// How the session of user `id` at credential version `version`, judged with the grants
/// `roles`, stands now (one query: the user with its roles). Role changes move no credential
/// version (that would end every session of the user), so they are compared here.
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: the surfaces that hold a caller past one request (a feed, an export) judge the session again with it"
)]
pub(crate) async fn standing(
    db: &Database,
    id: Uuid,
    version: i64,
    roles: &[RoleGrant],
) -> Result<Standing, Error> {
    Ok(match load_session(db, id).await? {
        Some((u, v)) if u.is_enabled && v == version => {
            if same_grants(&u.roles, roles) {
                Standing::Holds
            } else {
                Standing::RightsChanged
            }
        }
        _ => Standing::Ended,
    })
}

/// Whether `a` and `b` hold the same grants, in whatever order.
#[allow(
    dead_code,
    reason = "a door of the seam: the surfaces that hold a caller past one request (a feed, an export) judge the session again with it"
)]
pub(crate) fn same_grants(a: &[RoleGrant], b: &[RoleGrant]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    sorted_grants(a) == sorted_grants(b)
}

/// The grants `g` as (role, domain), sorted.
#[allow(
    dead_code,
    reason = "a door of the seam: the surfaces that hold a caller past one request (a feed, an export) judge the session again with it"
)]
fn sorted_grants(g: &[RoleGrant]) -> Vec<(&str, Option<Uuid>)> {
    let mut v: Vec<(&str, Option<Uuid>)> =
        g.iter().map(|r| (r.role.as_str(), r.domain_id)).collect();
    v.sort_unstable();
    v
}

/// Loads a user and its roles in one query; `None` when no such user exists.
///
/// # Errors
///
/// Database errors.
pub async fn load_user(db: &Database, id: Uuid) -> Result<Option<CurrentUser>, Error> {
    Ok(load_session(db, id).await?.map(|(u, _)| u))
}

/// Loads a user, its roles and its credential version (`users.token_version`) in one query.
///
/// # Errors
///
/// Database errors.
pub(crate) async fn load_session(
    db: &Database,
    id: Uuid,
) -> Result<Option<(CurrentUser, i64)>, Error> {
    session_on(&mut db.get().await?, id).await
}

/// [`load_user`] on `conn` (inside the caller's transaction, if any).
///
/// # Errors
///
/// Database errors.
#[allow(
    dead_code,
    reason = "a door of the seam: a build without the factors feature leaves it unused"
)]
pub(crate) async fn load_user_on(conn: &mut Conn, id: Uuid) -> Result<Option<CurrentUser>, Error> {
    Ok(session_on(conn, id).await?.map(|(u, _)| u))
}

/// [`load_session`] on a connection already checked out.
async fn session_on(conn: &mut Conn, id: Uuid) -> Result<Option<(CurrentUser, i64)>, Error> {
    type Row = (Uuid, String, bool, i64, Option<String>, Option<Uuid>);
    let q = users::table
        .left_join(user_roles::table)
        .filter(users::id.eq(Portable(id)))
        .select((
            users::id,
            users::email,
            users::is_enabled,
            users::token_version,
            user_roles::role.nullable(),
            user_roles::domain_id.nullable(),
        ));
    let rows: Vec<Row> = crate::__by_backend!(*conn, |c| sqlite => crate::db::sqlite_direct::load(c, q).await?,
        postgres => diesel_async::RunQueryDsl::load(q, c).await?);
    let Some(first) = rows.first() else {
        return Ok(None);
    };
    let version = first.3;
    let mut user = CurrentUser {
        id: first.0,
        email: first.1.clone(),
        is_enabled: first.2,
        second_factor: false,
        roles: Vec::new(),
    };
    for (_, _, _, _, role, domain_id) in rows {
        if let Some(role) = role {
            user.roles.push(RoleGrant { role, domain_id });
        }
    }
    Ok(Some((user, version)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(role: &str, domain: Option<Uuid>) -> RoleGrant {
        RoleGrant {
            role: role.to_owned(),
            domain_id: domain,
        }
    }

    #[test]
    fn grants_compare_in_any_order() {
        let d = Uuid::new_v4();
        let a = [grant("ADMIN", None), grant("EDITOR", Some(d))];
        let b = [grant("EDITOR", Some(d)), grant("ADMIN", None)];
        assert!(same_grants(&a, &b));
        assert!(same_grants(&[], &[]));
        assert!(!same_grants(&a, &a[..1]));
        assert!(!same_grants(
            &[grant("EDITOR", None)],
            &[grant("EDITOR", Some(d))]
        ));
        assert!(!same_grants(
            &[grant("ADMIN", None)],
            &[grant("USER", None)]
        ));
    }
}
