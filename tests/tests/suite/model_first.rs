//! A small application built from nothing with model-first resources, on both backends:
//! authors and books (a foreign key between them) declared by their structs alone; the first
//! migration generated into an empty folder (both backends' SQL, the manifest), applied, and
//! matching the models; the API serving them (create, list with a filter, validators and the
//! foreign key's 409); a second version of the book model with added columns generates the
//! next migration (`ALTER TABLE ... ADD COLUMN`), which applies; a third version that drops and
//! adds columns writes nothing and lists to-dos; nothing to do writes nothing; and a column
//! dropped by hand makes the schema check name it.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::test;
use chrono::{DateTime, Utc};
use crudforge::__bench::{make_migrations_for, MANIFEST};
use crudforge::db::AppMigrations;
use crudforge::migrations::{make_migrations, run_migration_dir, MigrationReport};
use crudforge::{with_conn, Api, Database, Resource};
use crudforge_tests::http::send;
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::json;
use std::path::{Path, PathBuf};
use uuid::Uuid;

/// An author: a unique name of 1 to 100 characters.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = authors)]
#[resource(model_first, rules = crudforge::perms::Open)]
pub struct Author {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(min_len = 1, max_len = 100, unique)]
    pub name: String,
    pub born: Option<i32>,
}

/// A book of an author (deleting an author with books is refused).
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = books)]
#[resource(model_first, rules = crudforge::perms::Open, index("author_id", "title"))]
pub struct Book {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[resource(max_len = 200)]
    pub title: String,
    #[resource(min = 1450, max = 2100)]
    pub year: i32,
    #[resource(references = "authors")]
    pub author_id: Uuid,
    #[resource(one_of = ["new", "used"], default = "new")]
    pub condition: String,
}

/// The book model's next version: an ISBN and a page count.
mod v2 {
    use super::*;

    #[derive(Debug, Clone, Queryable, Selectable, Resource)]
    #[diesel(table_name = books)]
    #[resource(model_first, name = "BookV2", rules = crudforge::perms::Open, index("author_id", "title"))]
    pub(crate) struct Book {
        pub id: Uuid,
        pub created_at: DateTime<Utc>,
        pub updated_at: DateTime<Utc>,
        #[resource(max_len = 200)]
        pub title: String,
        #[resource(min = 1450, max = 2100)]
        pub year: i32,
        #[resource(references = "authors")]
        pub author_id: Uuid,
        #[resource(one_of = ["new", "used"], default = "new")]
        pub condition: String,
        #[resource(max_len = 20, unique)]
        pub isbn: Option<String>,
        #[resource(default = 0, min = 0)]
        pub pages: i32,
    }
}

/// A version the generator must not guess: `condition` is gone and `shelf` (NOT NULL, no
/// default) is new (a rename?), and `year` became an `i64`.
mod v3 {
    use super::*;

    #[derive(Debug, Clone, Queryable, Selectable, Resource)]
    #[diesel(table_name = books)]
    #[resource(model_first, name = "BookV3", rules = crudforge::perms::Open)]
    pub(crate) struct Book {
        pub id: Uuid,
        pub created_at: DateTime<Utc>,
        pub updated_at: DateTime<Utc>,
        pub title: String,
        pub year: i64,
        pub author_id: Uuid,
        pub shelf: String,
        pub isbn: Option<String>,
        pub pages: i32,
    }
}

/// A version with a unique index on an existing column (`title`) and a new NOT NULL column
/// without a default (`shelf`), nothing gone: the index is written, the column is a to-do.
mod v4 {
    use super::*;

    #[derive(Debug, Clone, Queryable, Selectable, Resource)]
    #[diesel(table_name = books)]
    #[resource(model_first, name = "BookV4", rules = crudforge::perms::Open)]
    pub(crate) struct Book {
        pub id: Uuid,
        pub created_at: DateTime<Utc>,
        pub updated_at: DateTime<Utc>,
        #[resource(max_len = 200, unique)]
        pub title: String,
        #[resource(min = 1450, max = 2100)]
        pub year: i32,
        #[resource(references = "authors")]
        pub author_id: Uuid,
        #[resource(one_of = ["new", "used"], default = "new")]
        pub condition: String,
        #[resource(max_len = 20, unique)]
        pub isbn: Option<String>,
        #[resource(default = 0, min = 0)]
        pub pages: i32,
        pub shelf: String,
    }
}

/// `tests/migrations`, written by `make_migrations` for `Author` and `Book` (the models of
/// `docs/getting-started.md`) and embedded without a `build.rs`.
const LIBRARY: AppMigrations = crudforge::embed_migrations!("migrations");

/// The committed folder is what the generator writes for the models today: a copy gets no
/// new migration. `CRUDFORGE_BLESS_MIGRATIONS=1` writes it afresh into an empty folder.
#[::core::prelude::v1::test]
fn the_embedded_folder_is_current() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let models = [Author::MODEL.unwrap(), Book::MODEL.unwrap()];
    if std::env::var("CRUDFORGE_BLESS_MIGRATIONS").as_deref() == Ok("1") {
        let _ = std::fs::remove_dir_all(&fixture);
        let report = make_migrations_for(&models, &fixture, "create_library").unwrap();
        assert!(report.folder.is_some());
    }
    let copy = tempfile::tempdir().unwrap();
    for backend in ["sqlite", "postgres"] {
        for entry in std::fs::read_dir(fixture.join(backend)).unwrap() {
            let entry = entry.unwrap();
            let to = copy.path().join(backend).join(entry.file_name());
            std::fs::create_dir_all(&to).unwrap();
            for file in ["up.sql", "down.sql"] {
                std::fs::copy(entry.path().join(file), to.join(file)).unwrap();
            }
        }
    }
    let report = make_migrations_for(&models, copy.path(), "again").unwrap();
    assert_eq!(report.folder, None, "{report}");
    assert_eq!(
        std::fs::read_to_string(copy.path().join(MANIFEST)).unwrap(),
        std::fs::read_to_string(fixture.join(MANIFEST)).unwrap(),
        "the manifest lists the folders"
    );
}

type Req = test::TestRequest;

async fn execute(db: &Database, sql: &str) -> Result<(), String> {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).map_err(|e| e.to_string())
}

/// The text of `<dir>/<backend>/<folder>/<file>`.
fn read(dir: &Path, backend: &str, folder: &str, file: &str) -> String {
    std::fs::read_to_string(dir.join(backend).join(folder).join(file)).unwrap()
}

/// The folder a report wrote, checking both backends' files exist.
fn written(report: &MigrationReport, dir: &Path) -> String {
    let folder = report.folder.clone().expect("a migration was written");
    let expected: Vec<PathBuf> = ["sqlite", "postgres"]
        .iter()
        .map(|b| dir.join(b).join(&folder))
        .collect();
    assert_eq!(report.written, expected);
    for path in &expected {
        assert!(path.join("up.sql").is_file() && path.join("down.sql").is_file());
    }
    folder
}

async fn schema_lines(api: &Api) -> Vec<String> {
    api.check_schema()
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn mount_v1(t: &TestDb, db: &Database) -> Api {
    Api::new(t.config(), db.clone())
        .unwrap()
        .mount(Author::blueprint("/api/authors/"))
        .unwrap()
        .mount(Book::blueprint("/api/books/"))
        .unwrap()
}

backend_tests! {
    async fn the_embedded_migrations_build_the_models_tables(t) {
        let db = Database::connect(&t.config()).await.unwrap();
        let applied = db.run_migrations(Some(LIBRARY)).await.unwrap();
        assert!(applied.iter().any(|v| v.starts_with("2")), "{applied:?}");
        let api = mount_v1(&t, &db);
        assert_eq!(schema_lines(&api).await, Vec::<String>::new());
    }

    async fn an_application_grows_from_its_models(t) {
        let db = t.open(&t.config()).await;
        let dir = t.dir.path().join("migrations");
        let sqlite = db.backend() == Backend::Sqlite;

        // 1. The first migration, from nothing.
        let api = mount_v1(&t, &db);
        assert_eq!(api.model_tables().len(), 2);
        let first = make_migrations(&api, &dir, "create_library").unwrap();
        let folder = written(&first, &dir);
        assert!(folder.ends_with("_create_library"), "{folder}");
        assert_eq!(
            first.changes,
            ["authors: new table", "books: new table"],
            "{first}"
        );
        assert!(first.todo.is_empty(), "{first}");
        let lite = read(&dir, "sqlite", &folder, "up.sql");
        let pg = read(&dir, "postgres", &folder, "up.sql");
        assert!(
            lite.find("CREATE TABLE authors").unwrap() < lite.find("CREATE TABLE books").unwrap(),
            "the referenced table first:\n{lite}"
        );
        for expected in [
            "name TEXT NOT NULL UNIQUE CHECK (length(name) >= 1 AND length(name) <= 100)",
            "year INTEGER NOT NULL CHECK (year >= 1450 AND year <= 2100)",
            "author_id TEXT NOT NULL REFERENCES authors (id) ON DELETE RESTRICT",
            "condition TEXT NOT NULL DEFAULT 'new' CHECK (condition IN ('new', 'used'))",
            "CREATE INDEX IF NOT EXISTS books_author_id_title_idx ON books (author_id, title);",
        ] {
            assert!(lite.contains(expected), "{expected}\n{lite}");
        }
        for expected in [
            "id UUID PRIMARY KEY",
            "created_at TIMESTAMPTZ NOT NULL",
            "name VARCHAR(100) NOT NULL UNIQUE CHECK (char_length(name) >= 1)",
            "title VARCHAR(200) NOT NULL,",
            "author_id UUID NOT NULL REFERENCES authors (id) ON DELETE RESTRICT",
        ] {
            assert!(pg.contains(expected), "{expected}\n{pg}");
        }
        let down = read(&dir, "postgres", &folder, "down.sql");
        assert!(
            down.find("DROP TABLE books;").unwrap() < down.find("DROP TABLE authors;").unwrap(),
            "{down}"
        );
        let manifest = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert!(
            manifest.contains(&format!("sqlite/{folder}\n"))
                && manifest.contains(&format!("postgres/{folder}\n")),
            "{manifest}"
        );

        // 2. It applies, and the database then agrees with the models.
        assert_eq!(schema_lines(&api).await, ["authors: missing", "books: missing"]);
        let applied = run_migration_dir(&db, &dir).await.unwrap();
        assert_eq!(applied.len(), 1, "{applied:?}");
        assert_eq!(schema_lines(&api).await, Vec::<String>::new());

        // Nothing to do: no folder, a clear message.
        let again = make_migrations(&api, &dir, "nothing").unwrap();
        assert_eq!(again.folder, None);
        assert!(again.written.is_empty() && again.changes.is_empty());
        assert!(again.to_string().starts_with("no changes"), "{again}");
        assert_eq!(std::fs::read_dir(dir.join("sqlite")).unwrap().count(), 1);

        // 3. Serve: create, list with a filter; validators and the foreign key hold.
        let app = test::init_service(api.app()).await;
        let (status, author) = send(
            &app,
            Req::post().uri("/api/authors/").set_json(json!({"name": "Ursula"})),
        )
        .await;
        assert_eq!(status, 201, "{author}");
        let author_id = author["id"].as_str().unwrap().to_owned();
        for (title, year) in [("The Dispossessed", 1974), ("The Lathe of Heaven", 1971)] {
            let (status, body) = send(
                &app,
                Req::post().uri("/api/books/").set_json(
                    json!({"title": title, "year": year, "author_id": author_id}),
                ),
            )
            .await;
            assert_eq!(status, 201, "{body}");
            assert_eq!(body["condition"], "new", "the default");
        }
        let (status, list) = send(&app, Req::get().uri("/api/books/?year__lt=1973")).await;
        assert_eq!(status, 200, "{list}");
        let titles: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["title"].as_str().unwrap())
            .collect();
        assert_eq!(titles, ["The Lathe of Heaven"]);
        let (status, body) = send(
            &app,
            Req::post().uri("/api/books/").set_json(
                json!({"title": "x", "year": 1974, "author_id": Uuid::new_v4()}),
            ),
        )
        .await;
        assert_eq!(status, 409, "an unknown author: {body}");
        let (status, body) =
            send(&app, Req::delete().uri(&format!("/api/authors/{author_id}"))).await;
        assert_eq!(status, 409, "the author has books (RESTRICT): {body}");
        // The table's CHECK holds even for SQL that bypasses the API.
        let (uuid, now) = if sqlite {
            (format!("'{}'", Uuid::new_v4()), "'2026-01-01T00:00:00.000000Z'")
        } else {
            (format!("'{}'::uuid", Uuid::new_v4()), "now()")
        };
        let bad = execute(
            &db,
            &format!(
                "INSERT INTO books (id, created_at, updated_at, title, year, author_id) \
                 VALUES ({uuid}, {now}, {now}, 't', 3000, {})",
                if sqlite { format!("'{author_id}'") } else { format!("'{author_id}'::uuid") }
            ),
        )
        .await;
        assert!(bad.unwrap_err().to_lowercase().contains("check"));

        // 4. The next version of the book model: the next migration adds its columns.
        let api2 = Api::new(t.config(), db.clone())
            .unwrap()
            .mount(Author::blueprint("/api/authors/"))
            .unwrap()
            .mount(v2::Book::blueprint("/api/books/"))
            .unwrap();
        assert_eq!(
            schema_lines(&api2).await,
            ["books.isbn: missing", "books.pages: missing"]
        );
        let second = make_migrations(&api2, &dir, "add_isbn").unwrap();
        let folder2 = written(&second, &dir);
        assert!(folder2 > folder, "{folder2} sorts after {folder}");
        assert_eq!(
            second.changes,
            ["books.isbn: new column", "books.pages: new column"],
            "{second}"
        );
        let lite = read(&dir, "sqlite", &folder2, "up.sql");
        let pg = read(&dir, "postgres", &folder2, "up.sql");
        for expected in [
            "ALTER TABLE books ADD COLUMN isbn TEXT CHECK (length(isbn) <= 20);",
            "CREATE UNIQUE INDEX IF NOT EXISTS books_isbn_key ON books (isbn);",
            "ALTER TABLE books ADD COLUMN pages INTEGER NOT NULL DEFAULT 0 CHECK (pages >= 0);",
        ] {
            assert!(lite.contains(expected), "{expected}\n{lite}");
        }
        assert!(pg.contains("ALTER TABLE books ADD COLUMN isbn VARCHAR(20);"), "{pg}");
        let down = read(&dir, "sqlite", &folder2, "down.sql");
        assert!(down.contains("ALTER TABLE books DROP COLUMN pages;"), "{down}");
        // The new column's unique index goes before the column does.
        let drop_index = down.find("DROP INDEX IF EXISTS books_isbn_key;");
        let drop_isbn = down.find("ALTER TABLE books DROP COLUMN isbn;");
        assert!(
            drop_index.is_some() && drop_index < drop_isbn,
            "{down}"
        );
        let applied = run_migration_dir(&db, &dir).await.unwrap();
        assert_eq!(applied.len(), 1, "{applied:?}");
        assert_eq!(schema_lines(&api2).await, Vec::<String>::new());
        let manifest = std::fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert!(manifest.contains(&format!("postgres/{folder2}\n")), "{manifest}");

        let app2 = test::init_service(api2.app()).await;
        let (status, body) = send(
            &app2,
            Req::post().uri("/api/books/").set_json(json!({
                "title": "Always Coming Home", "year": 1985, "author_id": author_id,
                "isbn": "0-06-015456-7", "pages": 523
            })),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let (status, list) =
            send(&app2, Req::get().uri("/api/books/?isbn=0-06-015456-7")).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");
        assert_eq!(list["data"][0]["pages"], 523);

        // 5. Changes the generator does not guess: to-dos with their SQL, nothing written.
        let api3 = Api::new(t.config(), db.clone())
            .unwrap()
            .mount(v3::Book::blueprint("/api/books/"))
            .unwrap();
        let third = make_migrations(&api3, &dir, "guess").unwrap();
        assert_eq!(third.folder, None, "{third}");
        let todo: Vec<&str> = third.todo.iter().map(|t| t.what.as_str()).collect();
        assert!(todo.iter().any(|w| w.starts_with("books.condition: no field any more") && w.contains("a rename?")), "{todo:?}");
        assert!(todo.iter().any(|w| w.starts_with("books.shelf: new column")), "{todo:?}");
        assert!(todo.iter().any(|w| w.starts_with("books.year: declared INTEGER, the field needs BIGINT")), "{todo:?}");
        let rename = third.todo.iter().find(|t| t.what.starts_with("books.condition")).unwrap();
        assert!(rename.postgres.contains("ALTER TABLE books RENAME COLUMN condition TO shelf;"), "{}", rename.postgres);
        let retype = third.todo.iter().find(|t| t.what.starts_with("books.year")).unwrap();
        assert_eq!(retype.postgres, "ALTER TABLE books ALTER COLUMN year TYPE BIGINT USING year::BIGINT;");
        assert!(retype.sqlite.contains("rebuild the table"), "{}", retype.sqlite);
        assert!(third.to_string().contains("to do by hand (3 not written"), "{third}");
        assert_eq!(std::fs::read_dir(dir.join("sqlite")).unwrap().count(), 2);

        // 6. A column dropped by hand: the schema check names it.
        execute(&db, "ALTER TABLE books DROP COLUMN pages").await.unwrap();
        assert_eq!(schema_lines(&api2).await, ["books.pages: missing"]);

        // 7. An existing column made unique gets its index; a new NOT NULL column without a
        // default is a to-do (existing rows need a value).
        let api4 = Api::new(t.config(), db.clone())
            .unwrap()
            .mount(v4::Book::blueprint("/api/books/"))
            .unwrap();
        let fourth = make_migrations(&api4, &dir, "title_key").unwrap();
        let folder4 = written(&fourth, &dir);
        assert!(
            fourth.changes.iter().any(|c| c == "books.title: new unique index"),
            "{fourth}"
        );
        assert!(
            !fourth.changes.iter().any(|c| c.starts_with("books.shelf")),
            "{fourth}"
        );
        for backend in ["sqlite", "postgres"] {
            let up = read(&dir, backend, &folder4, "up.sql");
            assert!(
                up.contains("CREATE UNIQUE INDEX IF NOT EXISTS books_title_key ON books (title);"),
                "{up}"
            );
            let down = read(&dir, backend, &folder4, "down.sql");
            assert!(down.contains("DROP INDEX IF EXISTS books_title_key;"), "{down}");
        }
        let shelf = fourth
            .todo
            .iter()
            .find(|t| t.what.starts_with("books.shelf: new NOT NULL column without a default"))
            .unwrap_or_else(|| panic!("{fourth}"));
        assert!(shelf.sqlite.starts_with("ALTER TABLE books ADD COLUMN shelf TEXT NOT NULL"), "{}", shelf.sqlite);
        assert!(shelf.postgres.starts_with("ALTER TABLE books ADD COLUMN shelf"), "{}", shelf.postgres);
    }
}
