//! Per-user settings: `GET` and `POST /api/user/{user_id}/settings/`, over the library's
//! `user_settings` table.

use super::user_path::{may_write, path_user, user_exists};
use actix_web::{web, HttpRequest, HttpResponse};
use crudforge::prelude::*;
use crudforge::users::schema::user_settings;
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The longest setting key, in characters: [`SettingBody`]'s schema states it and its
/// [`Validate`] implementation checks it.
pub const KEY_MAX_LEN: usize = 255;

/// One setting on the wire.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema, PartialEq, Eq)]
pub struct SettingBody {
    /// Setting name (1 to 255 characters).
    #[schemars(length(min = 1, max = "KEY_MAX_LEN"))]
    pub key: String,
    /// Setting value.
    #[serde(default)]
    pub value: Option<String>,
}

/// The rules the schema states: `key` is 1 to [`KEY_MAX_LEN`] characters long.
impl Validate for SettingBody {
    fn validate(&self) -> Result<(), Error> {
        let len = self.key.chars().count();
        if len == 0 {
            Err(Error::invalid_field("key", "must not be empty"))
        } else if len > KEY_MAX_LEN {
            Err(Error::invalid_field(
                "key",
                format!("at most {KEY_MAX_LEN} characters allowed"),
            ))
        } else {
            Ok(())
        }
    }
}

/// A user's settings, ordered by key.
async fn settings_of(db: &Database, user: Uuid) -> Result<Vec<SettingBody>, Error> {
    let mut conn = db.get().await?;
    let rows: Vec<(String, Option<String>)> = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::load(
            user_settings::table
                .filter(user_settings::user_id.eq(Portable(user)))
                .order(user_settings::key)
                .select((user_settings::key, user_settings::value)),
            c,
        )
        .await
    })?;
    Ok(rows
        .into_iter()
        .map(|(key, value)| SettingBody { key, value })
        .collect())
}

/// `GET /api/user/{user_id}/settings/`.
pub async fn list_settings(
    Auth(caller): Auth,
    req: HttpRequest,
    user_id: Result<web::Path<Uuid>, actix_web::Error>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(user_id)?;
    may_write(&caller, user)?;
    user_exists(&st.db, user).await?;
    Ok(HttpResponse::Ok().json(settings_of(&st.db, user).await?))
}

/// `POST /api/user/{user_id}/settings/`: creates or updates one key; returns every setting.
pub async fn put_setting(
    Auth(caller): Auth,
    req: HttpRequest,
    user_id: Result<web::Path<Uuid>, actix_web::Error>,
    body: Json<SettingBody>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(user_id)?;
    may_write(&caller, user)?;
    let body = body.into_inner();
    body.validate()?;
    let SettingBody { key, value } = body;
    user_exists(&st.db, user).await?;
    let now = super::now();
    let mut conn = st.db.get().await?;
    // One statement: two first writes of the same key at once cannot both insert (the unique
    // index on (user_id, key) turns the second into an update instead of a 409).
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::insert_into(user_settings::table)
                .values((
                    user_settings::id.eq(Portable(Uuid::new_v4())),
                    user_settings::created_at.eq(Portable(now)),
                    user_settings::updated_at.eq(Portable(now)),
                    user_settings::user_id.eq(Portable(user)),
                    user_settings::key.eq(key.clone()),
                    user_settings::value.eq(value.clone()),
                ))
                .on_conflict((user_settings::user_id, user_settings::key))
                .do_update()
                .set((
                    user_settings::value.eq(value.clone()),
                    user_settings::updated_at.eq(Portable(now)),
                )),
            c,
        )
        .await
    })?;
    drop(conn);
    Ok(HttpResponse::Ok().json(settings_of(&st.db, user).await?))
}

#[cfg(test)]
mod tests {
    use super::{SettingBody, KEY_MAX_LEN};
    use crudforge::prelude::Validate;

    fn key(key: String) -> SettingBody {
        SettingBody { key, value: None }
    }

    #[test]
    fn keys_are_1_to_255_characters() {
        assert!(key(String::new()).validate().is_err());
        assert!(key("é".repeat(KEY_MAX_LEN)).validate().is_ok());
        assert!(key("é".repeat(KEY_MAX_LEN + 1)).validate().is_err());
    }
}
