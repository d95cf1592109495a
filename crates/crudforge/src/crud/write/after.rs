//! The row as an update leaves it, judged by the rules in the write's transaction. The update
//! rule judges the stored row (the UPDATE's own conditions); after it, the row as written must
//! still be in the caller's update scope (`Rules::updated`), so that nobody hands a row to
//! someone else, and a row the create rule allowed must still be allowed by it
//! (`Rules::created`), so that nobody makes by editing a row they could not have created. A
//! refusal rolls the transaction back.

use crate::condition::{parse_arg, Cond, Condition};
use crate::crud::relations::rules;
use crate::crud::request::Caller;
use crate::crud::shared::Shared;
use crate::crud::Resource;
use crate::db::Conn;
use crate::error::Error;
use crate::perms::Access;
use actix_web::HttpRequest;

/// What the rules ask of a caller's updated row; nothing for administrators and public
/// operations.
#[derive(Debug, Clone, Default)]
pub(crate) struct After {
    /// The scope the row as written must be in (`Rules::updated`), crossings linked.
    updated: Option<Condition>,
    /// The create rule's scope (`Rules::created`), crossings linked: a row inside it before
    /// the change must stay inside it.
    created: Option<Condition>,
}

impl After {
    /// What the rules ask of the rows `who` updates.
    ///
    /// # Errors
    ///
    /// The rules' refusal (401, 403).
    pub(crate) fn of<R: Resource>(
        who: &Caller,
        shared: &Shared<R>,
        req: &HttpRequest,
    ) -> Result<After, Error> {
        let Caller::User(user) = who else {
            return Ok(After::default());
        };
        let updated = match shared.rules.updated(user.as_ref()) {
            Access::All => None,
            access => Some(rules::link::<R>(
                req,
                access.into_conds()?,
                user.as_ref(),
                0,
            )),
        };
        Ok(After {
            updated,
            created: rules::created_scope(who, shared, req)?,
        })
    }

    /// Whether anything is judged after the write (then it runs in a transaction).
    pub(crate) fn judges(&self) -> bool {
        self.updated.is_some() || self.created.is_some()
    }

    /// Before the write: whether the row `conds` address is inside the create rule (false
    /// when there is none: nothing to keep it in).
    ///
    /// # Errors
    ///
    /// Database errors.
    pub(crate) async fn created_before<R: Resource>(
        &self,
        conn: &mut Conn,
        conds: &Condition,
    ) -> Result<bool, Error> {
        let Some(created) = &self.created else {
            return Ok(false);
        };
        Ok(R::count(conn, &conds.clone().and(created.clone())).await? > 0)
    }

    /// After the write: refuses `item` as written when it left the update scope, or the
    /// create rule it was inside before (`was_created`).
    ///
    /// # Errors
    ///
    /// 401 for an anonymous caller, 403 for others; database errors.
    pub(crate) async fn check<R: Resource>(
        &self,
        conn: &mut Conn,
        who: &Caller,
        item: &R,
        was_created: bool,
    ) -> Result<(), Error> {
        let created = self.created.as_ref().filter(|_| was_created);
        if self.updated.is_none() && created.is_none() {
            return Ok(());
        }
        let this = Condition::from(by_id(item)?);
        if let Some(scope) = &self.updated {
            if R::count(conn, &this.clone().and(scope.clone())).await? == 0 {
                return Err(refusal(
                    who,
                    format!(
                        "This change would leave the {} outside what you may change; nothing \
                         was written.",
                        R::NAME
                    ),
                ));
            }
        }
        if let Some(scope) = created {
            if R::count(conn, &this.and(scope.clone())).await? == 0 {
                return Err(refusal(
                    who,
                    format!(
                        "This change would make a {} you are not allowed to create; nothing was \
                         written.",
                        R::NAME
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// The condition of `item`'s id.
pub(crate) fn by_id<R: Resource>(item: &R) -> Result<Cond, Error> {
    R::field(R::ID_FIELD)
        .and_then(|f| {
            let key = item.key_of(R::ID_FIELD)?;
            parse_arg(f.kind, &key)
                .ok()
                .map(|arg| Cond::eq(f.name, arg))
        })
        .ok_or_else(|| Error::Internal("an updated row has no key to judge it by".into()))
}

/// 401 for an anonymous caller, 403 for others.
fn refusal(who: &Caller, why: String) -> Error {
    match who.viewer() {
        None => Error::Unauthorized(why.into()),
        Some(_) => Error::Forbidden(why.into()),
    }
}
