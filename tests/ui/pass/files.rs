//! A model with file members: one image, one document read by its owner alone, and a bounded
//! list of images.
use chrono::{DateTime, Utc};
use crudforge::files::{File, FileList};
use crudforge::Resource;
use diesel::prelude::*;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    albums (id) {
        id -> PortableUuid,
        created_at -> PortableTimestamp,
        updated_at -> PortableTimestamp,
        owner_id -> PortableUuid,
        cover -> Nullable<PortableJson>,
        booklet -> Nullable<PortableJson>,
        pages -> Nullable<PortableJson>,
    }
}

#[derive(Debug, Queryable, Selectable, Resource)]
#[diesel(table_name = albums)]
#[resource(rules(write = "owner_id = @me"))]
pub struct Album {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(set = me)]
    pub owner_id: Uuid,
    #[resource(file(max_size = "5 MiB", types = ["image/png", "image/jpeg", "image/webp"]))]
    pub cover: Option<File>,
    #[resource(file(max_size = "20 MiB", types = ["application/pdf"]), read = owner(owner_id))]
    pub booklet: Option<File>,
    #[resource(file(max_size = "2 MiB", types = ["image/png"], max_count = 12))]
    pub pages: Option<FileList>,
}

fn main() {
    let _ = Album::blueprint("/api/albums/");
}
