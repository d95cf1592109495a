//! Signed links to a file (`POST <item>/files/<file id>/link`): a URL that downloads it without
//! a header, for the user it was made for, until it expires or that user's sessions end (the
//! link signs the user's credential version, which a password change, a logout everywhere and
//! a disable raise).

use super::{readable_file, FILE_PARAM};
use crate::crud::shared::Shared;
use crate::crud::Resource;
use crate::error::Error;
use crate::state::ApiState;
use actix_web::{web, HttpRequest, HttpResponse};

/// `POST <item>/files/<file id>/link`: a URL that downloads the file without a header (for
/// an `<img src>`), valid `FILES_LINK_SECONDS`, for the caller alone.
pub(crate) async fn link<R: Resource>(
    shared: &Shared<R>,
    req: HttpRequest,
    _body: web::Bytes,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let Some(user) = crate::auth::current_user(&req).await? else {
        return Err(Error::Unauthorized("Authentication required.".into()));
    };
    let (_, file) = readable_file(shared, &req, Some(user.clone())).await?;
    // The credential version now: the link ends with the sessions of this moment.
    let version = crate::auth::extract::load_session(&st.db, user.id)
        .await?
        .map_or(0, |(_, v)| v);
    let key = req
        .match_info()
        .get(&shared.res_id_param)
        .ok_or_else(|| Error::Internal("no item key in the path".into()))?;
    let expires = chrono::Utc::now().timestamp()
        + i64::try_from(st.config.ops.files_link_seconds).unwrap_or(i64::MAX / 2);
    let signed = Signed {
        table: R::sql_table(),
        key,
        file: file.id,
        user: user.id,
        version,
        expires,
    };
    let sig = link_signature(st, &signed);
    let path = req.path();
    let download = path.strip_suffix("/link").unwrap_or(path);
    let token = format!("{expires}.{}.{version}.{sig}", user.id.simple());
    let body = serde_json::json!({
        "url": format!("{download}?link={token}"),
        "expires_at": chrono::DateTime::from_timestamp(expires, 0)
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
    });
    Ok(HttpResponse::Ok().json(body))
}

/// The `link` query parameter, when the request has one.
pub(super) fn link_param(req: &HttpRequest) -> Result<Option<String>, Error> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string())
        .map_err(|_| Error::bad_param("link", "is malformed"))?;
    let mut links = pairs
        .into_iter()
        .filter(|(k, _)| k == "link")
        .map(|(_, v)| v);
    let first = links.next();
    if links.next().is_some() {
        return Err(Error::bad_param("link", "is given twice"));
    }
    // An empty `link=` carries no credential: the request is judged as one without it.
    Ok(first.filter(|l| !l.is_empty()))
}

/// What a link signs.
struct Signed<'a> {
    /// The row's table and key, and the file's id.
    table: &'a str,
    key: &'a str,
    file: uuid::Uuid,
    /// The user it was made for, and their credential version then.
    user: uuid::Uuid,
    version: i64,
    /// Seconds since the epoch.
    expires: i64,
}

/// The signature of a link (`s`): HMAC-SHA-256 under the signing key, over a message no token
/// signature can share (it starts with a zero byte), URL-safe base64.
fn link_signature(st: &ApiState, s: &Signed<'_>) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut mac = <hmac::Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(st.signing_key.expose())
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    let Signed {
        table,
        key,
        file,
        user,
        version,
        expires,
    } = s;
    let message =
        format!("\0crudforge file link 2\0{table}\0{key}\0{file}\0{user}\0{version}\0{expires}");
    mac.update(message.as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// The user a signed link stands for, when it is genuine, unexpired, for this file, made at
/// the user's current credential version (no password change, logout everywhere or disable
/// since), and either used without credentials or by that same user (401 when it is not
/// genuine or valid, 403 when another user sends it).
pub(super) async fn link_user<R: Resource>(
    shared: &Shared<R>,
    req: &HttpRequest,
    link: &str,
) -> Result<crate::auth::CurrentUser, Error> {
    let st = ApiState::of(req)?;
    // A link that is not genuine, or no longer valid, is no credential (401, as a bad token);
    // a genuine one for another caller, or for a row its user may not read, is a 403.
    let refused = || Error::Unauthorized("The link is invalid or has expired.".into());
    let mut parts = link.splitn(4, '.');
    let (Some(expires), Some(user), Some(version), Some(sig)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused());
    };
    let expires: i64 = expires.parse().map_err(|_| refused())?;
    let user = uuid::Uuid::parse_str(user).map_err(|_| refused())?;
    let version: i64 = version.parse().map_err(|_| refused())?;
    let key = req
        .match_info()
        .get(&shared.res_id_param)
        .unwrap_or_default();
    let file = req
        .match_info()
        .get(FILE_PARAM)
        .and_then(|v| uuid::Uuid::parse_str(v).ok())
        .ok_or_else(refused)?;
    let signed = Signed {
        table: R::sql_table(),
        key,
        file,
        user,
        version,
        expires,
    };
    let expected = link_signature(st, &signed);
    let genuine: bool = subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), sig.as_bytes()).into();
    if !genuine || expires < chrono::Utc::now().timestamp() {
        return Err(refused());
    }
    // Another user's credentials with the link: the link is not theirs.
    if let Some(caller) = crate::auth::current_user(req).await? {
        if caller.id != user {
            return Err(Error::Forbidden(
                "This link was made for another user.".into(),
            ));
        }
    }
    // One query: the user, enabled, and still at the version the link signed.
    match crate::auth::extract::load_session(&st.db, user).await? {
        Some((u, now)) if u.is_enabled && now == version => Ok(u),
        _ => Err(refused()),
    }
}
