//! The user that a `/api/user/{user_id}/...` endpoint acts on: the id in the path, who may
//! act on that user, and whether it exists.

use super::users::AppUser;
use actix_web::web;
use crudforge::prelude::*;
use uuid::Uuid;

/// The user named in the path; a malformed id names nobody (404).
///
/// actix-web's `Path` extractor parses the id. Handlers take it as a `Result` and call this
/// after authentication: a `web::Path<Uuid>` argument would answer a malformed id before the
/// `Auth` extractor has run, so an anonymous caller would get 404 instead of 401 (the order
/// the library's generated endpoints follow too).
pub(crate) fn path_user(path: Result<web::Path<Uuid>, actix_web::Error>) -> Result<Uuid, Error> {
    path.map(web::Path::into_inner)
        .map_err(|_| Error::NotFound("No such user.".into()))
}

/// Who [`may_write`] lets in, for the descriptions of the routes that call it.
pub(crate) const MAY_WRITE: &str = "the user named in the path, or an administrator";

/// Whether the caller may write the user `target` (the user itself or an admin): see
/// [`MAY_WRITE`].
pub(crate) fn may_write(caller: &CurrentUser, target: Uuid) -> Result<(), Error> {
    if caller.id == target || caller.is_admin() {
        Ok(())
    } else {
        Err(Error::Forbidden(
            "You may not access this user's data.".into(),
        ))
    }
}

/// The user exists (404 otherwise).
pub(crate) async fn user_exists(db: &Database, id: Uuid) -> Result<(), Error> {
    AppUser::find(db, id)
        .await?
        .map(|_| ())
        .ok_or_else(|| Error::NotFound("No such user.".into()))
}
