//! The user system: users, roles, tokens, settings and domains, and the user blueprint with
//! login, refresh and the current user's profile.
//!
//! | Module | Owns |
//! |---|---|
//! | [`model`] | the models and the role names |
//! | [`rules`] | their permission rules |
//! | [`store`] | queries: passwords, accounts, roles, tokens |
//! | [`blueprint`] | the user endpoints: CRUD plus login, refresh and me |

pub mod blueprint;
pub mod model;
pub mod rules;
pub mod store;

pub use crate::auth::load_user;
pub use crate::schema;
pub use blueprint::{
    issue_tokens, LoginContext, LoginHook, LoginRequest, LoginResponse, RefreshRequest,
    UserBlueprint,
};
pub use model::{Domain, Role, Token, User, UserModel, UserRole, UserSetting};
pub use rules::{RoleRules, UserRules};
pub use store::{
    create_user, find_by_email, grant_role, revoke_token, set_enabled, set_password, store_token,
    token_owner,
};
