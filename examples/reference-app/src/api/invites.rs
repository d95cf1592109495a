//! Invites: the invite model and `GET` and `POST /api/user/{user_id}/invite/`, where the
//! sender is always the user in the path.
//!
//! The rules of `recipient_email` and `token` are declared on the [`Invite`] model, and
//! [`create_invite`] checks them through the generated [`InviteCreate`], as a generated POST
//! would. [`InviteBody`]'s schema attributes state them again for the OpenAPI description
//! (the body's doc comments are part of that description too); a test keeps the two equal.

use super::schema::invites;
use super::user_path::{may_write, path_user, user_exists};
use super::users::AppUser;
use actix_web::{web, HttpRequest, HttpResponse};
use chrono::{DateTime, Utc};
use crudforge::prelude::*;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Invite rules: the sender or an administrator.
#[derive(Debug, Clone, Copy, Default)]
pub struct InviteRules;

impl Rules<Invite> for InviteRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "sender_user_id")
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, "sender_user_id")
    }
}

/// An invitation sent by a user.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = invites)]
#[resource(rules = InviteRules)]
pub struct Invite {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// The recipient's account, when known.
    pub recipient_user_id: Option<Uuid>,
    /// Where the invitation goes.
    #[resource(email, max_len = 1024)]
    pub recipient_email: String,
    /// Who sent it (always the user in the URL).
    pub sender_user_id: Uuid,
    /// Invitation token.
    #[resource(max_len = 1024)]
    pub token: Option<String>,
    /// Whether the token was used.
    #[resource(default = false)]
    pub token_used: bool,
}

/// `POST /api/user/{user_id}/invite/` body.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteBody {
    /// Where to send the invitation (at most 1024 characters).
    #[schemars(email, length(max = 1024))]
    pub recipient_email: String,
    /// The recipient's account, when known.
    #[serde(default)]
    pub recipient_user_id: Option<Uuid>,
    /// Invitation token (at most 1024 characters).
    #[serde(default)]
    #[schemars(length(max = 1024))]
    pub token: Option<String>,
}

/// `GET /api/user/{user_id}/invite/`: invites sent by that user.
pub async fn list_invites(
    Auth(caller): Auth,
    req: HttpRequest,
    user_id: Result<web::Path<Uuid>, actix_web::Error>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(user_id)?;
    may_write(&caller, user)?;
    user_exists(&st.db, user).await?;
    let mut conn = st.db.get().await?;
    let conds = [Cond::eq("sender_user_id", Arg::Uuid(user))];
    let items = Invite::select(&mut conn, &conds, &[], None).await?;
    let out: Vec<<Invite as Resource>::Response> = items.into_iter().map(Into::into).collect();
    Ok(HttpResponse::Ok().json(out))
}

/// `POST /api/user/{user_id}/invite/`: the sender is always the user in the path.
pub async fn create_invite(
    Auth(caller): Auth,
    req: HttpRequest,
    user_id: Result<web::Path<Uuid>, actix_web::Error>,
    body: Json<InviteBody>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(user_id)?;
    may_write(&caller, user)?;
    let body = body.into_inner();
    let new = InviteCreate {
        recipient_user_id: body.recipient_user_id,
        recipient_email: body.recipient_email,
        sender_user_id: user,
        token: body.token,
        token_used: false,
    };
    // The model's `#[resource(...)]` rules, as a generated POST checks them.
    new.validate()?;
    user_exists(&st.db, user).await?;
    if let Some(r) = new.recipient_user_id {
        if AppUser::find(&st.db, r).await?.is_none() {
            return Err(Error::invalid_field("recipient_user_id", "no such user"));
        }
    }
    let mut conn = st.db.get().await?;
    let invite = Invite::insert(&mut conn, new).await?;
    Ok(HttpResponse::Created().json(<Invite as Resource>::Response::from(invite)))
}

#[cfg(test)]
mod tests {
    use super::{InviteBody, InviteCreate};

    /// The body's schema states the rules that `InviteCreate::validate` checks.
    #[test]
    fn the_body_documents_the_model_rules() {
        let body = serde_json::to_value(schemars::schema_for!(InviteBody)).unwrap();
        let model = serde_json::to_value(schemars::schema_for!(InviteCreate)).unwrap();
        assert_eq!(body["properties"]["recipient_email"]["format"], "email");
        for member in ["recipient_email", "token"] {
            assert!(body["properties"][member]["maxLength"].is_u64(), "{body}");
            for keyword in ["format", "maxLength"] {
                assert_eq!(
                    body["properties"][member][keyword], model["properties"][member][keyword],
                    "{member}: {keyword}"
                );
            }
        }
    }
}
