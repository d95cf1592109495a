// Every struct and field attribute, each where it applies.

use chrono::{DateTime, Utc};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    user_accounts (key) {
        key -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        handle -> Text,
        email -> Text,
        password -> Text,
        score -> Integer,
        internal -> Integer,
        bio -> Nullable<Text>,
        level -> Integer,
        deleted_at -> Nullable<PortableTimestamp>,
        owner -> Nullable<PortableUuid>,
        joined_at -> PortableTimestamp,
        origin -> Text,
        referrer -> Nullable<Text>,
    }
}

/// Where an account was created from.
fn origin_of(ctx: &crudforge::crud::HookCtx) -> &'static str {
    if ctx.flag("import") {
        "import"
    } else {
        "api"
    }
}

/// An account.
#[derive(Queryable, Selectable, Resource)]
#[resource(table = user_accounts, name = "Account", crate = "::crudforge")]
#[resource(index("handle", "level"), index("created_at", "key"), soft_delete)]
pub struct UserAccount {
    /// The key, under another name than `id`.
    #[resource(id)]
    pub key: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// A short handle.
    #[resource(max_len = 30)]
    pub handle: String,
    #[resource(email, max_len = 254)]
    pub email: String,
    /// Written, never returned.
    #[resource(write_only, max_len = 128)]
    pub password: String,
    /// Set by the database.
    #[resource(read_only)]
    pub score: i32,
    /// Loaded, never exposed.
    #[resource(skip)]
    pub internal: i32,
    /// Not usable in filters.
    #[resource(filter = false, max_len = 500)]
    pub bio: Option<String>,
    #[resource(default = 1, filter = true)]
    pub level: i32,
    /// Set by DELETE (`soft_delete`): read-only without saying so.
    pub deleted_at: Option<DateTime<Utc>>,
    /// The caller who created it (null for an anonymous one), set by the server.
    #[resource(set = me)]
    pub owner: Option<Uuid>,
    /// When it was created, set by the server.
    #[resource(set = now)]
    pub joined_at: DateTime<Utc>,
    /// Set by the server with an application function (its `&str` converts).
    #[resource(set = origin_of)]
    pub origin: String,
    /// Sent on create, never changed.
    #[resource(create_only, max_len = 100)]
    pub referrer: Option<String>,
}

fn main() {
    assert_eq!(UserAccount::NAME, "Account");
    assert_eq!(UserAccount::ID_FIELD, "key");
    assert_eq!(UserAccount::TABLE, "user_accounts");
    assert_eq!(UserAccount::INDEXES, &[&["handle", "level"][..], &["created_at", "key"][..]]);
    assert_eq!(
        UserAccount::indexes()[0].create_sql(),
        "CREATE INDEX IF NOT EXISTS user_accounts_handle_level_idx ON user_accounts (handle, level);"
    );
    assert!(UserAccount::field("internal").is_none());
    assert!(!UserAccount::field("bio").unwrap().filterable);
    assert!(UserAccount::field("password").unwrap().write_only);
    assert!(UserAccount::field("score").unwrap().read_only);
    assert!(UserAccount::SOFT_DELETE);
    let deleted_at = UserAccount::field("deleted_at").unwrap();
    assert!(deleted_at.read_only && deleted_at.filterable);
    let owner = UserAccount::field("owner").unwrap();
    assert!(owner.server_set && owner.read_only && owner.filterable);
    let referrer = UserAccount::field("referrer").unwrap();
    assert!(referrer.create_only && !referrer.read_only);
    // Server-set members are in no request schema; create-only ones in the create body only.
    let create = serde_json::to_value(schemars::schema_for!(UserAccountCreate)).unwrap();
    let update = serde_json::to_value(schemars::schema_for!(UserAccountUpdate)).unwrap();
    for member in ["owner", "joined_at", "origin"] {
        assert!(create["properties"].get(member).is_none(), "{member}");
        assert!(update["properties"].get(member).is_none(), "{member}");
    }
    assert!(create["properties"].get("referrer").is_some());
    assert!(update["properties"].get("referrer").is_none());
    let _: UserAccountCreate;
    let _: UserAccountUpdate;
    let _: UserAccountResponse;
}
