//! File members in a model-first table, on both backends: a listing with a cover and a bounded
//! list of photos declared by its struct alone; `make_migrations` writes their columns (JSON:
//! `TEXT` on SQLite, `JSONB` on PostgreSQL), the migration applies and matches the model, and
//! the API stores, lists, downloads and edits the files with no hand-written SQL.
#![allow(missing_docs, clippy::unwrap_used)]

use super::files::{auth, call, data, file, multipart, png, send, Req};
use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::files::{File, FileList};
use crudforge::migrations::{make_migrations, run_migration_dir};
use crudforge::{users, Api, Resource};
use crudforge_tests::{backend_tests, Backend};
use diesel::prelude::*;
use serde_json::json;
use uuid::Uuid;

/// A listing: its seller, a title, a cover and up to three photos.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = mf_listings)]
#[resource(
    model_first,
    rules(read = "seller_id = @me", write = "seller_id = @me")
)]
pub struct Listing {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(set = me)]
    pub seller_id: Uuid,
    #[resource(max_len = 100)]
    pub title: String,
    /// The picture the list shows.
    #[resource(file(max_size = "64 KiB", types = ["image/png"]))]
    pub cover: Option<File>,
    /// Up to three more.
    #[resource(file(max_size = "64 KiB", types = ["image/png"], max_count = 3))]
    pub photos: Option<FileList>,
}

fn ids(v: &serde_json::Value) -> Vec<String> {
    v["photos"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

backend_tests! {
    async fn file_members_of_a_model_first_table_need_no_hand_written_sql(t) {
        let cfg = t.config().with(|c| c.auth.bcrypt_cost = 4);
        let db = t.open(&cfg).await;
        let seller = users::create_user(&db, "seller@example.com", "some-pass", true, 4)
            .await
            .unwrap();
        let api = Api::new(cfg, db.clone())
            .unwrap()
            .mount(Listing::blueprint("/api/listings/"))
            .unwrap();

        // The migration, written from the model: the file members are JSON columns.
        let dir = t.dir.path().join("migrations");
        let report = make_migrations(&api, &dir, "create_listings").unwrap();
        assert_eq!(report.changes, ["mf_listings: new table"], "{report}");
        assert!(report.todo.is_empty(), "{report}");
        let folder = report.folder.clone().unwrap();
        let backend = match db.backend() {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        };
        let up = std::fs::read_to_string(dir.join(backend).join(&folder).join("up.sql")).unwrap();
        let json = match db.backend() {
            Backend::Sqlite => "TEXT",
            Backend::Postgres => "JSONB",
        };
        for column in [format!("cover {json}"), format!("photos {json}")] {
            assert!(up.contains(&column), "{column}\n{up}");
        }
        run_migration_dir(&db, &dir).await.unwrap();
        let drift = api.check_schema().await.unwrap();
        assert!(drift.is_empty(), "{drift:?}");

        // A listing with a cover and two photos, in one multipart create.
        let app = test::init_service(api.app()).await;
        let req = multipart(
            auth(Req::post().uri("/api/listings/"), &api, seller),
            &[
                data(json!({"title": "A bicycle"})),
                file("cover", "cover.png", "image/png", png(8, 9)),
                file("photos", "left.png", "image/png", png(8, 1)),
                file("photos", "right.png", "image/png", png(8, 2)),
            ],
        );
        let (s, v) = send(&app, req).await;
        assert_eq!(s, 201, "{v}");
        assert_eq!(v["cover"]["name"], "cover.png");
        assert_eq!(v["photos"][0]["name"], "left.png");
        assert_eq!(v["photos"][1]["name"], "right.png");
        let item = format!("/api/listings/{}", v["id"].as_str().unwrap());
        let [left, right] = <[String; 2]>::try_from(ids(&v)).unwrap();

        // The files download from the row's own path.
        let url = v["photos"][1]["url"].as_str().unwrap().to_owned();
        let (s, _, body) = call(&app, auth(Req::get().uri(&url), &api, seller)).await;
        assert_eq!(s, 200);
        assert_eq!(body, png(8, 2));

        // The list keeps what an update names, in its transaction, and the row reads back so.
        let req = auth(Req::patch().uri(&item), &api, seller).set_json(json!({"photos": [right]}));
        let (s, v) = send(&app, req).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(ids(&v), std::slice::from_ref(&right));
        let (s, v) = send(&app, auth(Req::get().uri(&item), &api, seller)).await;
        assert_eq!(s, 200, "{v}");
        assert_eq!(ids(&v), [right]);
        assert_ne!(ids(&v), [left]);
        assert_eq!(v["cover"]["name"], "cover.png");
    }
}
