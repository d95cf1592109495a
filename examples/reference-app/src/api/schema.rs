//! Tables of the reference application (the library's `users` and `domains` with the
//! columns this application's migration adds).
//!
//! `app_users` and `app_domains` restate tables the library owns (`users` and `domains` in
//! `crudforge::users::schema`): this application's migration adds columns to them, and a
//! Diesel model can only select columns its `table!` declares, so the application declares
//! each whole table, library columns included, under a name of its own (`sql_name` keeps the
//! SQL table the same). `invites`, `critters`, `habitats` and `visits` are the application's own tables.

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// The library's users table with profile and soft-delete columns.
    ///
    /// Restated in full because the migration adds the profile and soft-delete columns to the
    /// library's `users` table; the library's declaration knows only its own columns.
    #[sql_name = "users"]
    app_users (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// E-mail.
        email -> Text,
        /// bcrypt hash.
        password -> Nullable<Text>,
        /// Enabled.
        is_enabled -> Bool,
        /// First name.
        first_name -> Nullable<Text>,
        /// Last name.
        last_name -> Nullable<Text>,
        /// Avatar.
        avatar_url -> Nullable<Text>,
        /// Phone.
        phone -> Nullable<Text>,
        /// Address.
        address -> Nullable<Text>,
        /// City.
        city -> Nullable<Text>,
        /// State.
        state -> Nullable<Text>,
        /// Postal code.
        postal_code -> Nullable<Text>,
        /// Country.
        country -> Nullable<Text>,
        /// Soft-delete time.
        deleted_at -> Nullable<PortableTimestamp>,
        /// Soft-deleted.
        is_deleted -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// The library's domains table with the reference application's fields.
    ///
    /// Restated in full because the migration adds `domain_type`, `lat`, `lon` and
    /// `area_geojson` to the library's `domains` table; the library's declaration knows only
    /// its own columns.
    #[sql_name = "domains"]
    app_domains (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
        /// Active.
        active -> Bool,
        /// Kind of domain.
        domain_type -> Nullable<Text>,
        /// Latitude.
        lat -> Nullable<Double>,
        /// Longitude.
        lon -> Nullable<Double>,
        /// Area.
        area_geojson -> Nullable<PortableJson>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// Invitations sent by users.
    invites (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Recipient, when known.
        recipient_user_id -> Nullable<PortableUuid>,
        /// Recipient address.
        recipient_email -> Text,
        /// Sender.
        sender_user_id -> PortableUuid,
        /// Invitation token.
        token -> Nullable<Text>,
        /// Whether the token was used.
        token_used -> Bool,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// The demo resource.
    critters (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
        /// Species.
        species -> Text,
        /// Cuteness.
        cuteness_level -> Integer,
        /// Soft-delete time.
        deleted_at -> Nullable<PortableTimestamp>,
        /// Administrators' notes.
        vet_notes -> Nullable<Text>,
        /// Habitat.
        habitat_id -> Nullable<PortableUuid>,
        /// Photo.
        photo -> Nullable<PortableJson>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// Habitats critters live in.
    habitats (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Name.
        name -> Text,
        /// Climate.
        climate -> Text,
        /// Keeper (a user id).
        keeper_id -> Nullable<PortableUuid>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::prelude::{PortableJson, PortableTimestamp, PortableUuid};

    /// Visits to critters.
    visits (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Critter.
        critter_id -> PortableUuid,
        /// Note.
        note -> Text,
        /// Visitor.
        visitor_id -> PortableUuid,
    }
}
