//! The user system: users, roles, tokens, settings and domains, and the user blueprint with
//! login, refresh and the current user's profile.
//!
//! | Module | Owns |
//! |---|---|
//! | `model` | the models and the role names |
//! | `rules` | their permission rules |
//! | `store` | queries: passwords, accounts, roles, tokens |
//! | `identity` | e-mail addresses: one normalized form for storage, uniqueness and lookup |
//! | `addresses` | the recorded addresses and whether each was verified (mail's links, providers) |
//! | `privilege` | who may grant which role; nobody changes a user who outranks them |
//! | `domains` | domain deletion refused while roles reference the domain |
//! | `sign_up` | public registration on a user blueprint: which members a self-registering caller may send |
//! | `blueprint` | the user endpoints: CRUD plus login, refresh and me |
//! | `session` | login, refresh, logout and password change: the tokens they issue, the login hook |
//! | `keys` | API keys: a new key's scopes checked, a key exchanged for an access token |

/// The library's own tables (users, roles, tokens, settings, domains), as Diesel `table!`s,
/// for an application's own queries on them.
///
/// They are defined below both this module and `auth` (which loads the current user from
/// them), so that neither imports the other; this is their one public path.
pub mod schema {
    pub use crate::schema::*;
}

pub(crate) mod addresses;
pub(crate) mod blueprint;
pub(crate) mod domains;
pub(crate) mod guards;
pub(crate) mod identity;
pub(crate) mod keys;
pub(crate) mod model;
pub(crate) mod privilege;
pub(crate) mod rules;
pub(crate) mod session;
mod sign_up;
pub(crate) mod store;
pub(crate) mod tokens;

pub use blueprint::UserBlueprint;
pub use domains::guard_domain_delete;
pub use guards::{guard_roles, guard_users, unguarded_roles};
pub use identity::{normalize_stored_emails, EmailNormalization};
pub use keys::{exchange_api_key, ApiKeyAccess};
pub use model::{Domain, Role, Token, User, UserModel, UserRole, UserSetting};
pub use privilege::{may_grant, DEFAULT_ROLES};
pub use rules::{RoleRules, TokenRules, UserRules};
pub use session::{
    access_token, admit_sign_in, issue_tokens, LoginContext, LoginHook, LoginRequest,
    LoginResponse, PasswordChange,
};
#[allow(
    unused_imports,
    reason = "a door of the seam: a build without the mail or providers feature leaves it unused"
)]
pub(crate) use sign_up::{accounts, Accounts};
pub use store::{
    create_user, find_by_email, grant_role, set_enabled, set_password, set_password_hash_in,
};
pub(crate) use store::{create_user_in, grant_role_in, new_user_hash};
pub use tokens::{
    claims_current_in, end_sessions, revoke_token, store_token, token_owner, token_version,
    TokenRecord, MIN_API_KEY_LEN,
};
