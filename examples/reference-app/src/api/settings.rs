//! Per-user settings: `GET` and `POST /api/user/{user_id}/settings/`, over the library's
//! `user_settings` table.

use super::user_path::{may_write, path_user, user_exists};
use actix_web::{web, HttpRequest, HttpResponse};
use crudforge::auth::Auth;
use crudforge::sql_types::Portable;
use crudforge::users::schema::user_settings;
use crudforge::{with_conn, ApiState, Database, Error};
use diesel::prelude::*;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One setting on the wire.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema, PartialEq, Eq)]
pub struct SettingBody {
    /// Setting name (1 to 255 characters).
    #[schemars(length(min = 1, max = 255))]
    pub key: String,
    /// Setting value.
    #[serde(default)]
    pub value: Option<String>,
}

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
    path: web::Path<String>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(&path)?;
    may_write(&caller, user)?;
    user_exists(&st.db, user).await?;
    Ok(HttpResponse::Ok().json(settings_of(&st.db, user).await?))
}

/// `POST /api/user/{user_id}/settings/`: creates or updates one key; returns every setting.
pub async fn put_setting(
    Auth(caller): Auth,
    req: HttpRequest,
    path: web::Path<String>,
    body: crudforge::Json<SettingBody>,
) -> Result<HttpResponse, Error> {
    let st = ApiState::of(&req)?;
    let user = path_user(&path)?;
    may_write(&caller, user)?;
    let SettingBody { key, value } = body.into_inner();
    if key.is_empty() {
        return Err(Error::invalid_field("key", "must not be empty"));
    }
    crudforge::crud::check_max_len("key", &key, 255)?;
    user_exists(&st.db, user).await?;
    let now = super::now();
    let mut conn = st.db.get().await?;
    let changed = with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::execute(
            diesel::update(
                user_settings::table
                    .filter(user_settings::user_id.eq(Portable(user)))
                    .filter(user_settings::key.eq(key.clone())),
            )
            .set((
                user_settings::value.eq(value.clone()),
                user_settings::updated_at.eq(Portable(now)),
            )),
            c,
        )
        .await
    })?;
    if changed == 0 {
        with_conn!(conn, |c| {
            diesel_async::RunQueryDsl::execute(
                diesel::insert_into(user_settings::table).values((
                    user_settings::id.eq(Portable(Uuid::new_v4())),
                    user_settings::created_at.eq(Portable(now)),
                    user_settings::updated_at.eq(Portable(now)),
                    user_settings::user_id.eq(Portable(user)),
                    user_settings::key.eq(key.clone()),
                    user_settings::value.eq(value.clone()),
                )),
                c,
            )
            .await
        })?;
    }
    drop(conn);
    Ok(HttpResponse::Ok().json(settings_of(&st.db, user).await?))
}
