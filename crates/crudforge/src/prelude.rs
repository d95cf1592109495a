//! The names an application writes most, in one import: `use crudforge::prelude::*;`.
//!
//! It holds the builder and its parts (the API, its configuration and database, blueprints
//! and their operations), connections and their transactions, the portable SQL types a
//! `table!` names, the `Resource` trait and derive, the command line, the current user
//! extractors, the stock permission rules and expression rules, the doors' own access,
//! conditions for hand-written queries, and the error type. Everything else keeps its one path
//! in its module.

pub use crate::auth::{Admin, Auth, CurrentUser, MaybeAuth};
pub use crate::cli::{App, BoxError, Context};
pub use crate::condition::{Arg, Cond};
pub use crate::crud::limits::{Limit, LimitKey};
pub use crate::crud::{CustomRoute, HookCtx, Operation, OperationType, Validate};
pub use crate::db::{AppMigrations, Conn, TxMode};
pub use crate::perms::{
    Access, AdminOnly, DefaultRules, Door, DoorAccess, Open, OwnerRules, PublicRead,
    PublicReadAdminWrite, Rules,
};
pub use crate::sql_types::{Portable, PortableJson, PortableTimestamp, PortableUuid};
pub use crate::users::UserBlueprint;
pub use crate::{
    embed_migrations, with_conn, Api, ApiState, Config, CrudBlueprint, Database, Error, Json,
    Resource, Result,
};
