//! The public user schema (`PublicUser`): how users are shown in the user list and at
//! `GET /api/user/me`.

use super::users::AppUser;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use crudforge::crud::{entity_tag, Present};
use crudforge::prelude::*;
use crudforge::users::schema::user_roles;
use diesel::prelude::*;
use serde::Serialize;
use std::collections::HashMap;
use uuid::Uuid;

/// A user as others see it: the user list's members and `GET /api/user/me`, without the
/// password hash or other secrets.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "PublicUser")]
pub struct PublicUser {
    /// Identifier (for the item operations, `getUser` and the others).
    pub id: Uuid,
    /// E-mail address.
    pub email: String,
    /// Whether the account is soft-deleted.
    pub is_deleted: bool,
    /// Display name.
    pub display_name: String,
    /// Names of the roles held.
    pub roles: Vec<String>,
}

/// Builds public user bodies for a page of users with one query for all their roles.
#[derive(Debug)]
pub struct PublicUsers;

impl Present<AppUser> for PublicUsers {
    type Output = PublicUser;

    async fn present(db: &Database, items: Vec<AppUser>) -> Result<Vec<PublicUser>, Error> {
        let ids: Vec<Portable<Uuid>> = items.iter().map(|u| Portable(u.id)).collect();
        let mut roles: HashMap<Uuid, Vec<String>> = HashMap::new();
        if !ids.is_empty() {
            let mut conn = db.get().await?;
            let rows: Vec<(Uuid, String)> = with_conn!(conn, |c| {
                diesel_async::RunQueryDsl::load(
                    user_roles::table
                        .filter(user_roles::user_id.eq_any(ids.clone()))
                        .order((user_roles::user_id, user_roles::role))
                        .select((user_roles::user_id, user_roles::role)),
                    c,
                )
                .await
            })?;
            for (user, role) in rows {
                roles.entry(user).or_default().push(role);
            }
        }
        Ok(items
            .into_iter()
            .map(|u| PublicUser {
                id: u.id,
                display_name: u.display_name(),
                roles: roles.remove(&u.id).unwrap_or_default(),
                email: u.email,
                is_deleted: u.is_deleted,
            })
            .collect())
    }
}

/// `GET /api/user/me`: the public user schema of the caller.
pub async fn me(Auth(user): Auth, req: HttpRequest) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let found = AppUser::find(&st.db, user.id)
        .await?
        .ok_or_else(|| Error::Unauthorized("No current user.".into()))?;
    let mut out = PublicUsers::present(&st.db, vec![found]).await?;
    let body: PublicUser = out
        .pop()
        .ok_or_else(|| Error::Internal("no profile".into()))?;
    // With the strong entity tag of the body, as `me/` and every item answer send it.
    let body = serde_json::to_vec(&body)
        .map_err(|e| Error::Internal(format!("serializing a profile: {e}")))?;
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .insert_header((header::ETAG, entity_tag(&body)))
        .body(body))
}
