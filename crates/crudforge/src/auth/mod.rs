//! Authentication: JWTs (access, refresh, recovery), bcrypt passwords hashed off the async
//! workers (in steps that yield the core, `yielding_bcrypt`), and the current user, loaded
//! with its roles in one query.
//!
//! `tokens` and `password` are pure building blocks; `extract` reads a request's
//! `Authorization` header with them; `key_scope` judges the request of an access token
//! exchanged for an API key limited to scopes; `throttle` counts failed credential checks per
//! account and client address and answers 429 past the limits.

mod email;
pub(crate) mod extract;
pub(crate) mod key_scope;
pub(crate) mod password;
pub(crate) mod throttle;
pub(crate) mod user;
pub(crate) mod workers;
pub(crate) mod yielding_bcrypt;

pub use crate::jwt::{Claims, TokenKind, Tokens};
pub use email::normalize_email;
pub(crate) use extract::current_user_on;
pub(crate) use extract::require_user;
pub(crate) use extract::token_subject;
pub use extract::{current_user, load_user, Admin, Auth, MaybeAuth};
#[allow(
    unused_imports,
    reason = "a door of the seam: used by the factors feature"
)]
pub(crate) use extract::{load_session, load_user_on};
pub(crate) use password::verify_password;
pub use password::{hash_password, hash_password_for, PasswordPolicy};
pub use throttle::{record_failure, Account, Attempt};
pub(crate) use user::Rank;
pub use user::{CurrentUser, RoleGrant};
