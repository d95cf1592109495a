//! The library's own tables (users, roles, tokens, settings, domains), shared by the user
//! system and by authentication, which loads the current user from them.

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// Users.
    users (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// E-mail, stored normalized (`auth::normalize_email`); unique.
        email -> Text,
        /// bcrypt hash.
        password -> Nullable<Text>,
        /// Enabled.
        is_enabled -> Bool,
        /// Credential version: raised when the password changes, the account is disabled or
        /// the user logs out everywhere; access tokens of another version are refused.
        token_version -> BigInt,
        /// How many times the hash was replaced by a stronger hash of the same password (a
        /// rehash at login); an update that raises it does not end sessions.
        password_rehashes -> BigInt,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// Roles held by users.
    user_roles (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        user_id -> PortableUuid,
        /// Role name.
        role -> Text,
        /// Domain scope.
        domain_id -> Nullable<PortableUuid>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// Refresh tokens and API keys.
    tokens (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        user_id -> PortableUuid,
        /// Token value.
        token -> Text,
        /// Description.
        description -> Nullable<Text>,
        /// Expiry.
        expires_at -> Nullable<PortableTimestamp>,
        /// Revoked.
        revoked -> Bool,
        /// Revocation time.
        revoked_at -> Nullable<PortableTimestamp>,
        /// `api_key`, `refresh` or `recovery`.
        kind -> Text,
        /// A refresh token's family: the id every refresh token rotated from one login's
        /// shares (null for other kinds).
        family_id -> Nullable<PortableUuid>,
        /// An API key's scopes, space-separated (null: the owner's full access; other kinds).
        scopes -> Nullable<Text>,
        /// When an API key was last exchanged for an access token (null: never).
        last_used_at -> Nullable<PortableTimestamp>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// Per-user settings.
    user_settings (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        user_id -> PortableUuid,
        /// Key.
        key -> Text,
        /// Value.
        value -> Nullable<Text>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crate::sql_types::*;

    /// Domains (tenants).
    domains (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Unique name.
        name -> Text,
        /// Active.
        active -> Bool,
    }
}

diesel::joinable!(user_roles -> users (user_id));
diesel::joinable!(tokens -> users (user_id));
diesel::joinable!(user_settings -> users (user_id));
diesel::allow_tables_to_appear_in_same_query!(users, user_roles, tokens, user_settings, domains);

diesel::table! {
    /// Idempotency keys and the answers stored for them (see `crud::idempotency`).
    crudforge_idempotency_keys (caller, idem_key) {
        /// The caller's user id; `addr:<ip>` for anonymous callers (empty without an address).
        caller -> Text,
        /// The client's key.
        idem_key -> Text,
        /// SHA-256 of the request (method, path, body), hex.
        fingerprint -> Text,
        /// `in_progress` while the write runs, `done` with the answer.
        state -> Text,
        /// Stored status code.
        status -> Integer,
        /// Stored body.
        body -> Text,
        /// Stored `Location`.
        location -> Nullable<Text>,
        /// Stored `ETag`.
        etag -> Nullable<Text>,
        /// Microseconds since 1970.
        created_at -> BigInt,
        /// Microseconds since 1970 after which the key is forgotten.
        expires_at -> BigInt,
    }
}

diesel::table! {
    /// The counts of the limits per operation that all instances share (see `limits`).
    crudforge_limits (key) {
        /// `<prefix>|<operation or door>|<user:<id> or addr:<network>>`.
        key -> Text,
        /// Unix time (seconds) the current window ends.
        window_end -> BigInt,
        /// Units leased by all instances in the window.
        used -> BigInt,
        /// Units the last lease granted.
        granted -> BigInt,
    }
}

diesel::table! {
    /// Failed credential checks per account or client address (see `auth::throttle`).
    auth_failures (key) {
        /// `user:<id>`, `email:<digest>` or `addr:<network>`.
        key -> Text,
        /// Unix time (seconds) the current window began.
        window_start -> BigInt,
        /// Failures counted in the current window.
        failures -> Integer,
        /// Unix time (seconds) of the last change.
        updated_at -> BigInt,
    }
}
