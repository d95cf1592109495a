//! Sign-up: public registration as an option of the user blueprint, with its own rule of
//! which members a self-registering caller may send.

use super::model::UserModel;
use crate::auth::CurrentUser;
use crate::error::Error;
use crate::perms::{Access, Rules};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The members every sign-up may send.
pub(crate) const ALWAYS: [&str; 2] = ["email", "password"];

/// The rules of a user blueprint with sign-up: `POST` is open to everyone, and a caller who
/// is not an administrator may send only the sign-up members (anything else is 422 naming
/// it); everything else, and everything administrators do, is decided by the model's own
/// rules (`inner`).
pub(crate) struct SignUpRules<U> {
    pub(crate) inner: Arc<dyn Rules<U>>,
    /// What a self-registering caller may send besides [`ALWAYS`].
    pub(crate) members: Vec<&'static str>,
}

impl<U> SignUpRules<U> {
    fn allowed(&self) -> impl Iterator<Item = &str> + '_ {
        ALWAYS.iter().copied().chain(self.members.iter().copied())
    }
}

impl<U: 'static> Rules<U> for SignUpRules<U> {
    fn read(&self, user: Option<&CurrentUser>) -> Access {
        self.inner.read(user)
    }
    fn write(&self, user: Option<&CurrentUser>) -> Access {
        self.inner.write(user)
    }
    fn delete(&self, user: Option<&CurrentUser>) -> Access {
        self.inner.delete(user)
    }
    fn problems(&self) -> Vec<String> {
        self.inner.problems()
    }
    fn create(
        &self,
        user: Option<&CurrentUser>,
        body: &mut Map<String, Value>,
    ) -> Result<(), Error> {
        if user.is_some_and(CurrentUser::is_admin) {
            return self.inner.create(user, body);
        }
        // The first member outside the list, in the body's order, is named.
        if let Some(member) = body.keys().find(|k| !self.allowed().any(|a| a == *k)) {
            let allowed = self.allowed().collect::<Vec<_>>().join(", ");
            return Err(Error::invalid_field(
                member.as_str(),
                format!("cannot be set at sign-up (allowed: {allowed})"),
            ));
        }
        Ok(())
    }
    fn server_fields(&self) -> &[&'static str] {
        self.inner.server_fields()
    }
    fn admin_fields(&self) -> &[&'static str] {
        self.inner.admin_fields()
    }
    fn admin_update_fields(&self) -> &[&'static str] {
        self.inner.admin_update_fields()
    }
}

/// Checks the sign-up members of a blueprint of `U` before it is mounted: each must be a
/// member a client may send on create, and none may be one only administrators or the
/// server set.
///
/// # Errors
///
/// The first member that is not, named.
pub(crate) fn check_members<U: UserModel>(
    members: &[&'static str],
    rules: &dyn Rules<U>,
) -> Result<(), String> {
    for member in members {
        let field = U::FIELDS.iter().find(|f| f.name == *member);
        let writable = field.is_some_and(|f| !f.read_only)
            && !["id", "created_at", "updated_at"].contains(member);
        if !writable {
            return Err(format!(
                "sign_up of {}: `{member}` is not a member of the model that clients may send",
                U::NAME
            ));
        }
        if rules.admin_fields().contains(member) || rules.server_fields().contains(member) {
            return Err(format!(
                "sign_up of {}: `{member}` is set only by administrators or the server",
                U::NAME
            ));
        }
    }
    Ok(())
}
