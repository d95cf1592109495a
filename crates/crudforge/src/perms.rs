//! Permission rules: who may read, write and create a resource's rows, expressed as SQL scopes
//! so lists only ever contain readable rows.

use crate::auth::CurrentUser;
use crate::condition::{Arg, Cond, Condition};
use crate::error::Error;
use serde_json::{Map, Value};

/// What a caller may reach.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Every row.
    All,
    /// Only rows matching this condition (comparisons combine with AND, OR and NOT).
    Rows(Condition),
    /// Nothing; the caller must authenticate (401).
    Unauthenticated,
    /// Nothing; the caller is known but not allowed (403).
    Forbidden,
}

impl Access {
    /// The default rule: authenticated callers may, anonymous ones get 401.
    pub fn authenticated(user: Option<&CurrentUser>) -> Access {
        if user.is_some() {
            Access::All
        } else {
            Access::Unauthenticated
        }
    }

    /// Rows whose `field` holds the caller's id (anonymous: 401).
    pub fn owned_by(user: Option<&CurrentUser>, field: &'static str) -> Access {
        match user {
            Some(u) => Access::Rows(Cond::eq(field, Arg::Uuid(u.id)).into()),
            None => Access::Unauthenticated,
        }
    }

    /// Global administrators only (anonymous: 401, others: 403): an unscoped ADMIN or a
    /// SUPERADMIN; an ADMIN scoped to a domain is not one.
    pub fn admins(user: Option<&CurrentUser>) -> Access {
        match user {
            Some(u) if u.is_admin() => Access::All,
            Some(_) => Access::Forbidden,
            None => Access::Unauthenticated,
        }
    }

    /// Anyone, signed in or not.
    pub fn anyone(_user: Option<&CurrentUser>) -> Access {
        Access::All
    }

    /// The condition to add to a query, or the error to return.
    ///
    /// # Errors
    ///
    /// 401 or 403.
    pub fn into_conds(self) -> Result<Condition, Error> {
        match self {
            Access::All => Ok(Condition::always()),
            Access::Rows(c) => Ok(c),
            Access::Unauthenticated => Err(Error::Unauthorized("Authentication required.".into())),
            Access::Forbidden => Err(Error::Forbidden("You are not allowed to do this.".into())),
        }
    }
}

/// A resource's permission rules, evaluated with the current user (`None` when anonymous).
///
/// Administrators pass every rule before these are consulted. By default authenticated users
/// may read, write and create, and anonymous callers get 401.
pub trait Rules<R>: Send + Sync + 'static {
    /// Rows the caller may read (INDEX and GET), as a SQL scope.
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    /// Rows the caller may change or delete (PATCH and DELETE).
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::authenticated(user)
    }

    /// Whether the caller may create, checked before anything is written. `body` is the
    /// request's JSON object; a rule may set server-owned members (see
    /// [`Rules::server_fields`]).
    ///
    /// # Errors
    ///
    /// 401, 403, or a validation error.
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let _ = body;
        Access::authenticated(user).into_conds().map(|_| ())
    }

    /// Members the server sets (such as an owner); a client sending them gets 422.
    fn server_fields(&self) -> &[&'static str] {
        &[]
    }

    /// Members only administrators may send in POST or PATCH bodies (others get 403).
    fn admin_fields(&self) -> &[&'static str] {
        &[]
    }

    /// Members only administrators may send in PATCH bodies (others get 403), such as a
    /// password that its owner changes through an endpoint that asks for the current one.
    fn admin_update_fields(&self) -> &[&'static str] {
        &[]
    }

    /// What a blueprint whose resource has these rules by default gets when it is mounted:
    /// a function given the blueprint (as `&mut dyn Any`). The user system's role rows use it
    /// to be guarded unless the application says otherwise. None by default.
    #[doc(hidden)]
    fn on_mount(&self) -> Option<fn(&mut dyn std::any::Any)> {
        None
    }
}

/// The default rules: any authenticated user may read, write and create.
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultRules;

impl<R> Rules<R> for DefaultRules {}

/// Anyone, signed in or not, may read, write and create. For open data and tests; prefer
/// [`PublicRead`] when writes should need an account.
#[derive(Debug, Clone, Copy, Default)]
pub struct Open;

impl<R> Rules<R> for Open {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
    fn create(
        &self,
        _user: Option<&CurrentUser>,
        _body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        Ok(())
    }
}

/// Anyone may read; authenticated users may write and create.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicRead;

impl<R> Rules<R> for PublicRead {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
}

/// Anyone may read; only (global) administrators create, change and delete. For shared
/// reference data such as domains (tenants).
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicReadAdminWrite;

impl<R> Rules<R> for PublicReadAdminWrite {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::anyone(user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
    }
}

/// "The owner may read and write, admins all": rows whose `field` is the caller's id. On
/// create the server sets `field` to the caller's id; clients cannot choose it.
#[derive(Debug, Clone, Copy)]
pub struct OwnerRules {
    field: &'static str,
}

impl OwnerRules {
    /// Owner rules on the field `user_id`.
    pub const USER_ID: OwnerRules = OwnerRules { field: "user_id" };

    /// Owner rules on another field (`owner_id`).
    pub const fn new(field: &'static str) -> Self {
        OwnerRules { field }
    }

    fn name(&self) -> &'static str {
        self.field
    }
}

impl<R> Rules<R> for OwnerRules {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, self.name())
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::owned_by(user, self.name())
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        let u = user.ok_or_else(|| Error::Unauthorized("Authentication required.".into()))?;
        body.insert(self.name().to_owned(), Value::String(u.id.to_string()));
        Ok(())
    }

    fn server_fields(&self) -> &[&'static str] {
        std::slice::from_ref(&self.field)
    }
}

/// Administrators only, for every operation.
#[derive(Debug, Clone, Copy, Default)]
pub struct AdminOnly;

impl<R> Rules<R> for AdminOnly {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }

    fn write(&self, user: Option<&CurrentUser>) -> Access {
        Access::admins(user)
    }

    fn create(
        &self,
        user: Option<&CurrentUser>,
        _body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        Access::admins(user).into_conds().map(|_| ())
    }
}
