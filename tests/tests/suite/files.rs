//! File members (the `files` feature) on both backends: a multipart create and update store
//! files whose type is recognized from their content; downloads under the row's read rules
//! and member rules, with the stored type, `nosniff`, a sandboxing CSP, `ETag`, conditional
//! and range requests; a disguised document, an oversized file, a path in a file name and
//! client-written metadata are harmless; a failed write leaves no file, and a replaced,
//! removed or hard-deleted row's file is removed after commit while a soft delete keeps it;
//! a list member gains files by upload, keeps the ids a `PATCH` lists, and stays bounded.
#![allow(missing_docs, clippy::unwrap_used)]

use actix_web::dev::ServiceResponse;
use actix_web::test;
use crudforge::cli::{App, BoxError, Console};
use crudforge::files::{File, FileList};
use crudforge::users;
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::{backend_tests, Backend, TestDb};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::{json, Value};
use std::path::PathBuf;
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Pets.
    pets (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Owner.
        owner_id -> PortableUuid,
        /// Name.
        name -> Text,
        /// Shown to everyone signed in.
        shared -> Bool,
        /// Photo.
        photo -> Nullable<PortableJson>,
        /// The owner's papers.
        papers -> Nullable<PortableJson>,
        /// Album.
        album -> Nullable<PortableJson>,
    }
}

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Cards.
    cards (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Title.
        title -> Text,
        /// Picture.
        picture -> Nullable<PortableJson>,
        /// Deleted.
        deleted_at -> Nullable<PortableTimestamp>,
    }
}

type DateTime = chrono::DateTime<chrono::Utc>;

/// A pet: its owner reads and writes it; a shared pet is read by everyone signed in, but its
/// papers only by its owner.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = pets)]
#[resource(rules(read = "shared = true or owner_id = @me", write = "owner_id = @me"))]
pub struct Pet {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Its owner.
    #[resource(set = me)]
    pub owner_id: Uuid,
    /// Its name.
    #[resource(max_len = 40)]
    pub name: String,
    /// Whether everyone signed in sees it.
    pub shared: bool,
    /// Its photo.
    #[resource(file(max_size = "64 KiB", types = ["image/png", "image/jpeg"], thumbs = ["16x16"]))]
    pub photo: Option<File>,
    /// Its papers, for its owner alone.
    #[resource(file(max_size = "1 MiB", types = ["application/pdf"]), read = owner(owner_id))]
    pub papers: Option<File>,
    /// Up to three more pictures.
    #[resource(file(max_size = "64 KiB", types = ["image/png"], max_count = 3))]
    pub album: Option<FileList>,
}

/// A card: soft-deleted, open to anyone.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = cards)]
#[resource(soft_delete, rules = crudforge::perms::Open)]
pub struct Card {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime,
    /// Last change.
    pub updated_at: DateTime,
    /// Title.
    pub title: String,
    /// Its picture.
    #[resource(file(max_size = "64 KiB", types = ["image/png"]))]
    pub picture: Option<File>,
    /// When it was deleted.
    pub deleted_at: Option<DateTime>,
}

const DDL_SQLITE: &str = "CREATE TABLE pets (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, owner_id TEXT NOT NULL, name TEXT NOT NULL, shared BOOLEAN NOT NULL, photo TEXT, papers TEXT, album TEXT);
CREATE TABLE cards (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, title TEXT NOT NULL, picture TEXT, deleted_at TEXT)";
const DDL_PG: &str = "CREATE TABLE pets (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, owner_id UUID NOT NULL, name TEXT NOT NULL, shared BOOLEAN NOT NULL, photo JSONB, papers JSONB, album JSONB);
CREATE TABLE cards (id UUID PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL, updated_at TIMESTAMPTZ NOT NULL, title TEXT NOT NULL, picture JSONB, deleted_at TIMESTAMPTZ)";

/// A PNG's signature and header, then `n` bytes of `fill`.
pub(crate) fn png(n: usize, fill: u8) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    v.extend(std::iter::repeat_n(fill, n));
    v
}

fn pdf() -> Vec<u8> {
    b"%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n".to_vec()
}

/// Where a test's files are kept.
#[derive(Debug, Clone)]
enum Store {
    /// `files/` in the test's data folder.
    Local,
    /// A bucket of its own on the S3 test server.
    S3 { endpoint: String, bucket: String },
}

impl Store {
    /// A new bucket on the S3 test server, when there is one.
    fn s3() -> Option<Store> {
        let endpoint = crudforge_tests::tools::s3_endpoint()?;
        let bucket = format!("t-{}", Uuid::new_v4().simple());
        let (status, body) =
            crudforge_tests::tools::s3_request(&endpoint, "PUT", &format!("/{bucket}"), b"");
        assert_eq!(status, 200, "creating the bucket: {body}");
        Some(Store::S3 { endpoint, bucket })
    }

    /// The `FILES_STORAGE` of this store.
    fn url(&self) -> Option<String> {
        match self {
            Store::Local => None,
            Store::S3 { endpoint, bucket } => Some(format!(
                "s3://{bucket}/app?endpoint={endpoint}&region=us-east-1"
            )),
        }
    }
}

struct World {
    api: Api,
    data: PathBuf,
    store: Store,
    alice: Uuid,
    bob: Uuid,
}

/// The test configuration on `store`.
fn config(t: &TestDb, store: &Store) -> Config {
    t.config().with(|c| {
        c.auth.bcrypt_cost = 4;
        c.ops.files_storage = store.url();
        if matches!(store, Store::S3 { .. }) {
            c.ops.files_s3_access_key_id = Some("testing".into());
            c.ops.files_s3_secret_access_key = Some(crudforge::config::Secret::new("testing"));
        }
    })
}

fn build(config: Config, db: Database) -> Result<Api, BoxError> {
    Ok(Api::new(config, db)?
        .mount(Pet::blueprint("/api/pets/").batch([crudforge::crud::Operation::Delete]))?
        .mount(Card::blueprint("/api/cards/"))?)
}

/// Writes a file into the store as a crash would leave it: `age` old (on a local store; an
/// S3 object is as old as it is), held by no row.
fn orphan(w: &World, table: &str, age: std::time::Duration) -> String {
    let id = Uuid::new_v4();
    match &w.store {
        Store::Local => {
            let dir = w.data.join("files").join(table);
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(id.to_string());
            std::fs::write(&path, png(100, 5)).unwrap();
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(std::time::SystemTime::now() - age).unwrap();
        }
        Store::S3 { endpoint, bucket } => {
            let (status, body) = crudforge_tests::tools::s3_request(
                endpoint,
                "PUT",
                &format!("/{bucket}/app/{table}/{id}"),
                &png(100, 5),
            );
            assert_eq!(status, 200, "{body}");
        }
    }
    format!("{table}/{id}")
}

async fn world(t: &TestDb, store: &Store) -> World {
    world_with(t, store, |_| {}).await
}

async fn world_with(t: &TestDb, store: &Store, tune: impl FnOnce(&mut Config)) -> World {
    let pets = Pet::blueprint("/api/pets/").batch([crudforge::crud::Operation::Delete]);
    world_mounting(t, store, tune, pets).await
}

/// The world, with the pets mounted by `pets`.
async fn world_mounting(
    t: &TestDb,
    store: &Store,
    tune: impl FnOnce(&mut Config),
    pets: crudforge::CrudBlueprint<Pet>,
) -> World {
    let cfg = config(t, store).with(tune);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => DDL_SQLITE,
        Backend::Postgres => DDL_PG,
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let alice = users::create_user(&db, "alice@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let bob = users::create_user(&db, "bob@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let api = Api::new(cfg, db)
        .unwrap()
        .mount(pets)
        .unwrap()
        .mount(Card::blueprint("/api/cards/"))
        .unwrap();
    World {
        api,
        data: t.data_dir(),
        store: store.clone(),
        alice,
        bob,
    }
}

pub(crate) type Req = test::TestRequest;

pub(crate) fn auth(req: Req, api: &Api, id: Uuid) -> Req {
    let token = api.state().tokens.access(id).unwrap();
    req.insert_header(("authorization", format!("Bearer {token}")))
}

/// One part of a multipart body: its name, file name and content.
pub(crate) struct Part<'a> {
    name: &'a str,
    file_name: Option<&'a str>,
    content_type: &'a str,
    body: Vec<u8>,
}

pub(crate) fn data(v: Value) -> Part<'static> {
    Part {
        name: "data",
        file_name: None,
        content_type: "application/json",
        body: v.to_string().into_bytes(),
    }
}

pub(crate) fn file<'a>(
    name: &'a str,
    file_name: &'a str,
    content_type: &'a str,
    body: Vec<u8>,
) -> Part<'a> {
    Part {
        name,
        file_name: Some(file_name),
        content_type,
        body,
    }
}

const BOUNDARY: &str = "----crudforge-test-boundary";

/// A `multipart/form-data` request of `parts`.
pub(crate) fn multipart(req: Req, parts: &[Part<'_>]) -> Req {
    req.insert_header((
        "content-type",
        format!("multipart/form-data; boundary={BOUNDARY}"),
    ))
    .set_payload(multipart_body(parts))
}

/// The `multipart/form-data` body of `parts`.
fn multipart_body(parts: &[Part<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for p in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        let disposition = match p.file_name {
            Some(f) => format!("form-data; name=\"{}\"; filename=\"{f}\"", p.name),
            None => format!("form-data; name=\"{}\"", p.name),
        };
        body.extend_from_slice(format!("Content-Disposition: {disposition}\r\n").as_bytes());
        body.extend_from_slice(format!("Content-Type: {}\r\n\r\n", p.content_type).as_bytes());
        body.extend_from_slice(&p.body);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// What [`call_watching`] saw of a request.
#[derive(Debug, PartialEq)]
struct Watched {
    status: u16,
    /// Whether the server read the body at all.
    read: bool,
    /// The unfinished uploads (`.upload-*`) seen in the folder while the body was arriving.
    uploads: Vec<String>,
}

/// Sends `req` with the multipart body of `parts` in two pieces: all but its last 64 bytes,
/// then, once an unfinished upload (`.upload-*`) shows in `folder` (or after a while), the rest.
async fn call_watching<S, B>(app: &S, req: Req, parts: &[Part<'_>], folder: PathBuf) -> Watched
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody + 'static,
{
    let body = multipart_body(parts);
    let (head, tail) = body.split_at(body.len() - 64);
    let pieces = vec![head.to_vec(), tail.to_vec()];
    let seen = std::sync::Arc::new(std::sync::Mutex::new((false, Vec::new())));
    let noted = seen.clone();
    let stream = futures_util::stream::unfold(0usize, move |i| {
        let (pieces, noted, folder) = (pieces.clone(), noted.clone(), folder.clone());
        async move {
            noted.lock().unwrap().0 = true;
            if i == 1 {
                // The server has the file's first bytes: wait for it to start storing them.
                for _ in 0..500 {
                    let uploads: Vec<String> = std::fs::read_dir(&folder)
                        .into_iter()
                        .flatten()
                        .flatten()
                        .map(|f| f.file_name().to_string_lossy().into_owned())
                        .filter(|n| n.starts_with(".upload-"))
                        .collect();
                    if !uploads.is_empty() {
                        noted.lock().unwrap().1 = uploads;
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
            let piece = pieces.get(i)?.clone();
            Some((
                Ok::<_, actix_http::error::PayloadError>(actix_web::web::Bytes::from(piece)),
                i + 1,
            ))
        }
    });
    let stream: std::pin::Pin<Box<dyn futures_util::Stream<Item = _>>> =
        Box::pin(futures_util::StreamExt::fuse(stream));
    let req = req
        .insert_header((
            "content-type",
            format!("multipart/form-data; boundary={BOUNDARY}"),
        ))
        .to_request();
    let (req, _) = req.replace_payload(actix_http::Payload::from(stream));
    let resp = test::call_service(app, req).await;
    let status = resp.status().as_u16();
    let _ = test::read_body(resp).await;
    let (read, uploads) = seen.lock().unwrap().clone();
    Watched {
        status,
        read,
        uploads,
    }
}

/// Status, headers and raw body of a request.
pub(crate) async fn call<S, B>(
    app: &S,
    req: Req,
) -> (u16, actix_web::http::header::HeaderMap, Vec<u8>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody + 'static,
{
    let resp = test::call_service(app, req.to_request()).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = test::read_body(resp).await.to_vec();
    (status, headers, body)
}

/// Status and JSON body of a request.
pub(crate) async fn send<S, B>(app: &S, req: Req) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody + 'static,
{
    let (s, _, body) = call(app, req).await;
    (s, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// A real PNG of `w` × `h` pixels.
fn real_png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb([10, 120, 200]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A PNG whose header declares `w` × `h` pixels (with a correct checksum) over one pixel of
/// data: a decompression bomb's shape.
fn bomb_png(w: u32, h: u32) -> Vec<u8> {
    let mut bomb = real_png(1, 1);
    bomb[16..20].copy_from_slice(&w.to_be_bytes());
    bomb[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = bomb[12..29].iter().fold(!0u32, |mut c, b| {
        c ^= u32::from(*b);
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
        c
    });
    bomb[29..33].copy_from_slice(&(!crc).to_be_bytes());
    bomb
}

/// The files stored, as `table/id`.
fn stored(w: &World) -> Vec<String> {
    let mut out = Vec::new();
    match &w.store {
        Store::Local => {
            let Ok(tables) = std::fs::read_dir(w.data.join("files")) else {
                return out;
            };
            for t in tables.flatten() {
                for f in std::fs::read_dir(t.path()).unwrap().flatten() {
                    out.push(format!(
                        "{}/{}",
                        t.file_name().to_string_lossy(),
                        f.file_name().to_string_lossy()
                    ));
                }
            }
        }
        Store::S3 { endpoint, bucket } => {
            let (status, xml) = crudforge_tests::tools::s3_request(
                endpoint,
                "GET",
                &format!("/{bucket}?list-type=2"),
                b"",
            );
            assert_eq!(status, 200, "{xml}");
            for part in xml.split("<Key>").skip(1) {
                let key = part.split("</Key>").next().unwrap();
                out.push(key.strip_prefix("app/").unwrap_or(key).to_owned());
            }
        }
    }
    out.sort();
    out
}

/// Creates a pet of `owner` with a photo; gives its JSON.
async fn pet_with_photo<S, B>(
    app: &S,
    w: &World,
    owner: Uuid,
    shared: bool,
    photo: Vec<u8>,
) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody + 'static,
{
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, owner),
        &[
            data(json!({"name": "Rex", "shared": shared})),
            file("photo", "rex.png", "image/png", photo),
            file("papers", "papers.pdf", "application/pdf", pdf()),
        ],
    );
    let (s, v) = send(app, req).await;
    assert_eq!(s, 201, "{v}");
    v
}

async fn an_upload_is_stored_privately_and_downloads_with_safe_headers_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let bytes = png(3000, 7);
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            data(json!({"name": "Rex", "shared": false})),
            // The client's type and name are not believed: the name loses its folders.
            file("photo", "../../etc/passwd", "text/html", bytes.clone()),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    let photo = &v["photo"];
    assert_eq!(photo["name"], "passwd");
    assert_eq!(photo["type"], "image/png");
    assert_eq!(photo["size"], bytes.len());
    let file_id = photo["id"].as_str().unwrap().to_owned();
    let url = photo["url"].as_str().unwrap().to_owned();
    assert_eq!(url, format!("/api/pets/{id}/files/{file_id}"));
    assert!(v["papers"].is_null());
    // Stored under its own id, owner-only; no client name anywhere on disk.
    assert_eq!(stored(&w), vec![format!("pets/{file_id}")]);
    #[cfg(unix)]
    if matches!(store, Store::Local) {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(w.data.join("files")), 0o700);
        assert_eq!(mode(w.data.join("files/pets").join(&file_id)), 0o600);
    }
    // A GET of the row shows the same metadata.
    let (s, got) = send(
        &app,
        auth(Req::get().uri(&format!("/api/pets/{id}")), &w.api, w.alice),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(got["photo"], *photo);

    let (s, h, body) = call(&app, auth(Req::get().uri(&url), &w.api, w.alice)).await;
    assert_eq!(s, 200);
    assert_eq!(body, bytes);
    assert_eq!(h.get("content-type").unwrap(), "image/png");
    assert_eq!(h.get("x-content-type-options").unwrap(), "nosniff");
    let csp = h.get("content-security-policy").unwrap().to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("sandbox"),
        "{csp}"
    );
    assert_eq!(
        h.get("content-disposition").unwrap(),
        "inline; filename*=UTF-8''passwd"
    );
    let etag = h.get("etag").unwrap().to_str().unwrap().to_owned();
    assert_eq!(etag, format!("\"{file_id}\""));
    // Conditional and range requests.
    let (s, _, body) = call(
        &app,
        auth(Req::get().uri(&url), &w.api, w.alice).insert_header(("if-none-match", etag.clone())),
    )
    .await;
    assert_eq!((s, body.len()), (304, 0));
    let (s, h, body) = call(
        &app,
        auth(Req::get().uri(&url), &w.api, w.alice).insert_header(("range", "bytes=0-7")),
    )
    .await;
    assert_eq!(s, 206);
    assert_eq!(body, &bytes[..8]);
    assert_eq!(
        h.get("content-range").unwrap().to_str().unwrap(),
        format!("bytes 0-7/{}", bytes.len())
    );
    let (s, _, body) = call(
        &app,
        auth(Req::get().uri(&url), &w.api, w.alice).insert_header(("range", "bytes=-10")),
    )
    .await;
    assert_eq!((s, body.as_slice()), (206, &bytes[bytes.len() - 10..]));
    let (s, h, _) = call(
        &app,
        auth(Req::get().uri(&url), &w.api, w.alice).insert_header(("range", "bytes=999999-")),
    )
    .await;
    assert_eq!(s, 416);
    assert_eq!(
        h.get("content-range").unwrap().to_str().unwrap(),
        format!("bytes */{}", bytes.len())
    );
    // A PDF is never shown inline.
    let v = pet_with_photo(&app, &w, w.alice, false, png(10, 1)).await;
    let papers = v["papers"]["url"].as_str().unwrap().to_owned();
    let (s, h, body) = call(&app, auth(Req::get().uri(&papers), &w.api, w.alice)).await;
    assert_eq!(s, 200);
    assert_eq!(body, pdf());
    assert_eq!(h.get("content-type").unwrap(), "application/pdf");
    assert!(h
        .get("content-disposition")
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("attachment;"));
}

async fn a_caller_who_may_not_read_the_row_or_member_gets_no_file_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, png(100, 2)).await;
    let id = v["id"].as_str().unwrap().to_owned();
    let photo = v["photo"]["url"].as_str().unwrap().to_owned();
    let papers = v["papers"]["url"].as_str().unwrap().to_owned();
    // Bob cannot read the row: neither file.
    for url in [&photo, &papers] {
        let (s, _, _) = call(&app, auth(Req::get().uri(url), &w.api, w.bob)).await;
        assert_eq!(s, 404, "{url}");
        // Anonymous: the same refusal as a GET of the row.
        let (row, _, _) = call(&app, Req::get().uri(&format!("/api/pets/{id}"))).await;
        let (s, _, _) = call(&app, Req::get().uri(url)).await;
        assert!(
            s == row && (s == 401 || s == 404),
            "{url}: {s} (row: {row})"
        );
    }
    // Shared: Bob reads the row and its photo, but not the owner's papers.
    let (s, v) = send(
        &app,
        auth(
            Req::patch()
                .uri(&format!("/api/pets/{id}"))
                .set_json(json!({"shared": true})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let (s, row) = send(
        &app,
        auth(Req::get().uri(&format!("/api/pets/{id}")), &w.api, w.bob),
    )
    .await;
    assert_eq!(s, 200);
    assert!(row.get("papers").is_none(), "{row}");
    let (s, _, _) = call(&app, auth(Req::get().uri(&photo), &w.api, w.bob)).await;
    assert_eq!(s, 200);
    let (s, _, _) = call(&app, auth(Req::get().uri(&papers), &w.api, w.bob)).await;
    assert_eq!(s, 404);
    // Another row's path does not serve this row's file.
    let other = pet_with_photo(&app, &w, w.bob, true, png(5, 3)).await;
    let file_id = photo.rsplit('/').next().unwrap();
    let crossed = format!(
        "/api/pets/{}/files/{file_id}",
        other["id"].as_str().unwrap()
    );
    let (s, _, _) = call(&app, auth(Req::get().uri(&crossed), &w.api, w.bob)).await;
    assert_eq!(s, 404);
    // Not a file id at all.
    let (s, _, _) = call(
        &app,
        auth(
            Req::get().uri(&format!("/api/pets/{id}/files/..%2F..%2Fetc%2Fpasswd")),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 404);
}

async fn disguised_oversized_or_client_written_files_are_refused_and_leave_nothing_on(
    t: TestDb,
    store: Store,
) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let html = b"<html><body><script>alert(1)</script></body></html>".to_vec();
    let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\" onload=\"alert(1)\"/>".to_vec();
    for (body, why) in [
        (html, "accepted: image/png, image/jpeg"),
        (svg, "accepted: image/png, image/jpeg"),
        (pdf(), "the file is application/pdf"),
    ] {
        let req = multipart(
            auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
            &[
                data(json!({"name": "Rex", "shared": false})),
                file("photo", "x.png", "image/png", body),
            ],
        );
        let (s, v) = send(&app, req).await;
        assert_eq!(s, 422, "{v}");
        assert_eq!(v["field"], "photo", "{v}");
        assert!(v["detail"].as_str().unwrap().contains(why), "{v}");
    }
    // Over its size: 413.
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            data(json!({"name": "Rex", "shared": false})),
            file("photo", "big.png", "image/png", png(70 * 1024, 0)),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 413, "{v}");
    // Metadata written by the client (it could name another row's file) is refused.
    let forged = json!({"id": Uuid::new_v4(), "name": "x.png", "size": 1, "type": "image/png"});
    let (s, v) = send(
        &app,
        auth(
            Req::post()
                .uri("/api/pets/")
                .set_json(json!({"name": "Rex", "shared": false, "photo": forged})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["field"], "photo");
    // An unknown part, a repeated file, an idempotency key.
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            data(json!({"name": "Rex", "shared": false})),
            file("avatar", "a.png", "image/png", png(4, 0)),
        ],
    );
    assert_eq!(send(&app, req).await.0, 422);
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            file("photo", "a.png", "image/png", png(4, 0)),
            file("photo", "b.png", "image/png", png(4, 0)),
        ],
    );
    assert_eq!(send(&app, req).await.0, 422);
    let req = multipart(
        auth(
            Req::post()
                .uri("/api/pets/")
                .insert_header(("idempotency-key", "k-1")),
            &w.api,
            w.alice,
        ),
        &[
            data(json!({"name": "Rex", "shared": false})),
            file("photo", "a.png", "image/png", png(4, 0)),
        ],
    );
    assert_eq!(send(&app, req).await.0, 400);
    // A write that fails after its files were stored leaves none behind.
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            data(json!({"name": "x".repeat(41), "shared": false})),
            file("photo", "a.png", "image/png", png(4, 0)),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["errors"][0]["field"], "name", "{v}");
    // An anonymous upload is refused before its files are kept.
    let req = multipart(
        Req::post().uri("/api/pets/"),
        &[
            data(json!({"name": "Rex", "shared": false})),
            file("photo", "a.png", "image/png", png(4, 0)),
        ],
    );
    assert_eq!(send(&app, req).await.0, 401);
    assert_eq!(stored(&w), Vec::<String>::new());
    // A declared length past what the files and members could hold: 413 before reading.
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            data(json!({"name": "Rex", "shared": false})),
            file("photo", "a.png", "image/png", png(4, 0)),
        ],
    )
    .insert_header(("content-length", (1u64 << 30).to_string()));
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 413, "{v}");
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains("than its files and members may be"),
        "{v}"
    );
    assert_eq!(stored(&w), Vec::<String>::new());
    let (s, list) = send(&app, auth(Req::get().uri("/api/pets/"), &w.api, w.alice)).await;
    assert_eq!(s, 200);
    assert_eq!(list["pagination"]["total"], 0, "{list}");
}

async fn replacing_removing_and_deleting_remove_the_old_file_after_commit_on(
    t: TestDb,
    store: Store,
) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, png(10, 1)).await;
    let id = v["id"].as_str().unwrap().to_owned();
    let first = v["photo"]["url"].as_str().unwrap().to_owned();
    assert_eq!(stored(&w).len(), 2);
    // The photo replaced on its own (no `data` part).
    let req = multipart(
        auth(
            Req::patch().uri(&format!("/api/pets/{id}")),
            &w.api,
            w.alice,
        ),
        &[file(
            "photo",
            "new.jpg",
            "image/jpeg",
            b"\xFF\xD8\xFF\xE0\0\x10JFIF\0".to_vec(),
        )],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["photo"]["type"], "image/jpeg");
    assert_eq!(v["name"], "Rex");
    let second = v["photo"]["url"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    assert_eq!(
        call(&app, auth(Req::get().uri(&first), &w.api, w.alice))
            .await
            .0,
        404
    );
    assert_eq!(
        call(&app, auth(Req::get().uri(&second), &w.api, w.alice))
            .await
            .0,
        200
    );
    assert_eq!(stored(&w).len(), 2);
    // A refused update keeps the old file and stores nothing new.
    let req = multipart(
        auth(Req::patch().uri(&format!("/api/pets/{id}")), &w.api, w.bob),
        &[file("photo", "mine.png", "image/png", png(4, 0))],
    );
    let (s, _) = send(&app, req).await;
    assert!(s == 403 || s == 404, "{s}");
    assert_eq!(stored(&w).len(), 2);
    // Removed with null.
    let (s, v) = send(
        &app,
        auth(
            Req::patch()
                .uri(&format!("/api/pets/{id}"))
                .set_json(json!({"photo": null})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert!(v["photo"].is_null());
    assert_eq!(
        call(&app, auth(Req::get().uri(&second), &w.api, w.alice))
            .await
            .0,
        404
    );
    assert_eq!(stored(&w).len(), 1);
    // The row deleted: its files go too.
    let papers = v["papers"]["url"].as_str().unwrap().to_owned();
    let (s, _) = send(
        &app,
        auth(
            Req::delete().uri(&format!("/api/pets/{id}")),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 204);
    assert_eq!(
        call(&app, auth(Req::get().uri(&papers), &w.api, w.alice))
            .await
            .0,
        404
    );
    assert_eq!(stored(&w), Vec::<String>::new());
    // A batch delete: the deleted rows' files go, the others stay.
    let a = pet_with_photo(&app, &w, w.alice, false, png(4, 1)).await;
    let b = pet_with_photo(&app, &w, w.alice, false, png(4, 2)).await;
    let keep = pet_with_photo(&app, &w, w.alice, false, png(4, 3)).await;
    assert_eq!(stored(&w).len(), 6);
    let del = json!({"items": [{"id": a["id"]}, {"id": b["id"]}]});
    let (s, v) = send(
        &app,
        auth(
            Req::post().uri("/api/pets/batch/delete/").set_json(del),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 204, "{v}");
    let left = stored(&w);
    let expected: Vec<String> = {
        let mut e = vec![
            format!("pets/{}", keep["photo"]["id"].as_str().unwrap()),
            format!("pets/{}", keep["papers"]["id"].as_str().unwrap()),
        ];
        e.sort();
        e
    };
    assert_eq!(left, expected);
}

/// The ids of a rendered list member.
fn album_ids(v: &Value) -> Vec<String> {
    v["album"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f["id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn a_list_member_gains_keeps_and_removes_files_within_its_bound_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    // Past the bound on create: 422 naming the member, nothing stored, no row.
    let four: Vec<Part<'_>> = (0..4u8)
        .map(|i| file("album", "a.png", "image/png", png(8, i)))
        .collect();
    let mut parts = vec![data(json!({"name": "Rex", "shared": false}))];
    parts.extend(four);
    let (s, v) = send(
        &app,
        multipart(auth(Req::post().uri("/api/pets/"), &w.api, w.alice), &parts),
    )
    .await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("album"), "{v}");
    assert!(v.to_string().contains("at most 3"), "{v}");
    assert_eq!(stored(&w), Vec::<String>::new());
    // Metadata in JSON is refused: only uploads fill a list.
    let fake = json!({"name": "Rex", "shared": false, "album": [{"id": Uuid::new_v4(), "name": "x", "size": 1, "type": "image/png"}]});
    let (s, v) = send(
        &app,
        auth(
            Req::post().uri("/api/pets/").set_json(fake),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 422, "{v}");
    // Two files on create, in the order sent.
    let req = multipart(
        auth(Req::post().uri("/api/pets/"), &w.api, w.alice),
        &[
            data(json!({"name": "Rex", "shared": false})),
            file("album", "one.png", "image/png", png(8, 1)),
            file("album", "two.png", "image/png", png(8, 2)),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    let item = format!("/api/pets/{id}");
    assert_eq!(v["album"][0]["name"], "one.png");
    assert_eq!(v["album"][1]["name"], "two.png");
    let [a, b] = <[String; 2]>::try_from(album_ids(&v)).unwrap();
    assert_eq!(stored(&w).len(), 2);
    let url_a = v["album"][0]["url"].as_str().unwrap().to_owned();
    let url_b = v["album"][1]["url"].as_str().unwrap().to_owned();
    let (s, _, body) = call(&app, auth(Req::get().uri(&url_b), &w.api, w.alice)).await;
    assert_eq!(s, 200);
    assert_eq!(body, png(8, 2));
    // Another user may not read the row: no file of its list either.
    assert_eq!(
        call(&app, auth(Req::get().uri(&url_a), &w.api, w.bob))
            .await
            .0,
        404
    );
    // An update's parts are added after the files the list holds.
    let req = multipart(
        auth(Req::patch().uri(&item), &w.api, w.alice),
        &[file("album", "three.png", "image/png", png(8, 3))],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 200, "{v}");
    let ids = album_ids(&v);
    assert_eq!(ids.len(), 3);
    assert_eq!(ids[..2], [a.clone(), b.clone()]);
    let c = ids[2].clone();
    assert_eq!(stored(&w).len(), 3);
    // One more passes the bound: 422, the list unchanged, the new upload not kept.
    let req = multipart(
        auth(Req::patch().uri(&item), &w.api, w.alice),
        &[
            data(json!({"name": "Max"})),
            file("album", "four.png", "image/png", png(8, 4)),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 422, "{v}");
    assert!(v.to_string().contains("at most 3"), "{v}");
    assert_eq!(stored(&w).len(), 3);
    let (_, v) = send(&app, auth(Req::get().uri(&item), &w.api, w.alice)).await;
    assert_eq!(album_ids(&v), [a.clone(), b.clone(), c.clone()]);
    assert_eq!(v["name"], "Rex", "the refused update changed nothing");
    // A keep list reorders and drops: the dropped file is removed after commit.
    let (s, v) = send(
        &app,
        auth(
            Req::patch().uri(&item).set_json(json!({"album": [c, a]})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(album_ids(&v), [c.clone(), a.clone()]);
    assert_eq!(
        call(&app, auth(Req::get().uri(&url_b), &w.api, w.alice))
            .await
            .0,
        404
    );
    assert_eq!(stored(&w).len(), 2);
    // Keeping a file the list no longer holds, naming one twice, or not a list: 422.
    for bad in [json!([b]), json!([a, a]), json!("x"), json!([1])] {
        let (s, v) = send(
            &app,
            auth(
                Req::patch().uri(&item).set_json(json!({"album": bad})),
                &w.api,
                w.alice,
            ),
        )
        .await;
        assert_eq!(s, 422, "{bad}: {v}");
        assert_eq!(v["field"], "album", "{bad}: {v}");
    }
    // Another user's keep list: refused by the row's rules, the files stay.
    let (s, _) = send(
        &app,
        auth(
            Req::patch().uri(&item).set_json(json!({"album": []})),
            &w.api,
            w.bob,
        ),
    )
    .await;
    assert!(s == 403 || s == 404, "{s}");
    assert_eq!(stored(&w).len(), 2);
    // A keep list and new parts together: kept first, then the new ones.
    let req = multipart(
        auth(Req::patch().uri(&item), &w.api, w.alice),
        &[
            data(json!({"album": [a]})),
            file("album", "five.png", "image/png", png(8, 5)),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 200, "{v}");
    let ids = album_ids(&v);
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], a);
    assert_eq!(v["album"][1]["name"], "five.png");
    assert_eq!(stored(&w).len(), 2);
    // `files gc` keeps the files a list holds.
    let cli = App::new("pets-app", build).config(config(&t, &store));
    let mut console = Console::captured("");
    let argv = vec!["pets-app", "files", "gc", "--older-than", "0"];
    assert_eq!(cli.run(argv, &mut console).await, 0, "{}", console.errors());
    assert_eq!(stored(&w).len(), 2);
    // An empty keep list empties the list (null); deleting the row would have removed them.
    let (s, v) = send(
        &app,
        auth(
            Req::patch().uri(&item).set_json(json!({"album": []})),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert!(v["album"].is_null(), "{v}");
    assert_eq!(stored(&w), Vec::<String>::new());
    // A list's files go with their row.
    let req = multipart(
        auth(Req::patch().uri(&item), &w.api, w.alice),
        &[file("album", "six.png", "image/png", png(8, 6))],
    );
    assert_eq!(send(&app, req).await.0, 200);
    assert_eq!(stored(&w).len(), 1);
    let (s, _) = send(&app, auth(Req::delete().uri(&item), &w.api, w.alice)).await;
    assert_eq!(s, 204);
    assert_eq!(stored(&w), Vec::<String>::new());
}

async fn a_soft_deleted_row_keeps_its_file_until_purged_on(t: TestDb, store: Store) {
    let w = world_with(&t, &store, |c| c.db.soft_delete_retention = 1).await;
    let app = test::init_service(w.api.app()).await;
    let req = multipart(
        Req::post().uri("/api/cards/"),
        &[
            data(json!({"title": "hello"})),
            file("picture", "p.png", "image/png", png(20, 9)),
        ],
    );
    let (s, v) = send(&app, req).await;
    assert_eq!(s, 201, "{v}");
    let id = v["id"].as_str().unwrap().to_owned();
    let url = v["picture"]["url"].as_str().unwrap().to_owned();
    assert_eq!(call(&app, Req::get().uri(&url)).await.0, 200);
    let (s, _) = send(&app, Req::delete().uri(&format!("/api/cards/{id}"))).await;
    assert_eq!(s, 204);
    assert_eq!(call(&app, Req::get().uri(&url)).await.0, 404);
    assert_eq!(stored(&w).len(), 1);
    // Restored, it serves again.
    let (s, _) = send(&app, Req::post().uri(&format!("/api/cards/{id}/restore/"))).await;
    assert_eq!(s, 200);
    assert_eq!(call(&app, Req::get().uri(&url)).await.0, 200);
    // Purged: the row and its file go for good.
    assert_eq!(
        send(&app, Req::delete().uri(&format!("/api/cards/{id}")))
            .await
            .0,
        204
    );
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(w.api.purge_deleted().await.unwrap(), 1);
    assert_eq!(stored(&w), Vec::<String>::new());
}

async fn files_gc_removes_old_orphans_and_keeps_held_and_young_files_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, png(10, 1)).await;
    let photo = format!("pets/{}", v["photo"]["id"].as_str().unwrap());
    let hour = std::time::Duration::from_secs(7200);
    let old = orphan(&w, "pets", hour);
    let young = orphan(&w, "pets", std::time::Duration::ZERO);
    // A folder no mounted resource names is not this application's to sweep.
    let foreign = orphan(&w, "someone_elses", hour);
    // An object's age in a bucket cannot be set: there every orphan is swept at once.
    let (args, mut removed, kept): (&[&str], Vec<&String>, Vec<&String>) = match store {
        Store::Local => (&[], vec![&old], vec![&photo, &young, &foreign]),
        Store::S3 { .. } => (
            &["--older-than", "0"],
            vec![&old, &young],
            vec![&photo, &foreign],
        ),
    };
    removed.sort();
    let cli = App::new("pets-app", build).config(config(&t, &store));
    let mut console = Console::captured("");
    let mut argv = vec!["pets-app", "files", "gc", "--dry-run"];
    argv.extend_from_slice(args);
    assert_eq!(cli.run(argv, &mut console).await, 0, "{}", console.errors());
    let mut listed: Vec<String> = console.output().lines().map(str::to_owned).collect();
    listed.sort();
    let expected: Vec<String> = removed.iter().map(|r| format!("{r} (129 bytes)")).collect();
    assert_eq!(listed, expected);
    let total = format!(
        "would remove {} orphaned file(s), {} bytes",
        removed.len(),
        129 * removed.len()
    );
    assert!(console.errors().contains(&total), "{}", console.errors());
    assert!(stored(&w).contains(&old));
    let mut console = Console::captured("");
    let mut argv = vec!["pets-app", "files", "gc"];
    argv.extend_from_slice(args);
    assert_eq!(cli.run(argv, &mut console).await, 0, "{}", console.errors());
    let total = format!("removed {} orphaned file(s)", removed.len());
    assert!(console.errors().contains(&total), "{}", console.errors());
    let left = stored(&w);
    for gone in &removed {
        assert!(!left.contains(gone), "{gone} in {left:?}");
    }
    for kept in kept {
        assert!(left.contains(kept), "{kept} in {left:?}");
    }
    // The held file still downloads.
    let url = v["photo"]["url"].as_str().unwrap();
    assert_eq!(
        call(&app, auth(Req::get().uri(url), &w.api, w.alice))
            .await
            .0,
        200
    );
}

async fn a_signed_link_works_without_a_header_for_its_user_alone_and_expires_on(
    t: TestDb,
    store: Store,
) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, png(10, 1)).await;
    let url = v["photo"]["url"].as_str().unwrap().to_owned();
    // Bob may not read the row: no link for him.
    let (s, _) = send(
        &app,
        auth(Req::post().uri(&format!("{url}/link")), &w.api, w.bob),
    )
    .await;
    assert_eq!(s, 404);
    assert_eq!(
        send(&app, Req::post().uri(&format!("{url}/link"))).await.0,
        401
    );
    let (s, made) = send(
        &app,
        auth(Req::post().uri(&format!("{url}/link")), &w.api, w.alice),
    )
    .await;
    assert_eq!(s, 200, "{made}");
    let link = made["url"].as_str().unwrap().to_owned();
    assert!(link.starts_with(&format!("{url}?link=")), "{link}");
    assert!(made["expires_at"].is_string());
    // No header needed (an <img src>).
    let (s, _, body) = call(&app, Req::get().uri(&link)).await;
    assert_eq!((s, body), (200, png(10, 1)));
    // Bob with his own credentials cannot use Alice's link.
    assert_eq!(
        call(&app, auth(Req::get().uri(&link), &w.api, w.bob))
            .await
            .0,
        403
    );
    assert_eq!(
        call(&app, auth(Req::get().uri(&link), &w.api, w.alice))
            .await
            .0,
        200
    );
    // A link changed in any part is no credential (401): another file, another expiry, another
    // user, garbage.
    let token = link.split("?link=").nth(1).unwrap().to_owned();
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    let other = pet_with_photo(&app, &w, w.alice, false, png(3, 3)).await;
    let other_url = other["photo"]["url"].as_str().unwrap();
    assert_eq!(
        call(&app, Req::get().uri(&format!("{other_url}?link={token}")))
            .await
            .0,
        401
    );
    parts[0] = (parts[0].parse::<i64>().unwrap() + 3600).to_string();
    assert_eq!(
        call(
            &app,
            Req::get().uri(&format!("{url}?link={}", parts.join(".")))
        )
        .await
        .0,
        401
    );
    let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
    parts[1] = w.bob.simple().to_string();
    assert_eq!(
        call(
            &app,
            Req::get().uri(&format!("{url}?link={}", parts.join(".")))
        )
        .await
        .0,
        401
    );
    assert_eq!(
        call(&app, Req::get().uri(&format!("{url}?link=garbage")))
            .await
            .0,
        401
    );
    // An empty `link=` is no link: the request is judged by its header alone (anonymous, this
    // pet that is not shared is no item to them).
    assert_eq!(
        call(&app, Req::get().uri(&format!("{url}?link="))).await.0,
        call(&app, Req::get().uri(&url)).await.0,
    );
    assert_eq!(call(&app, Req::get().uri(&url)).await.0, 404);
    assert_eq!(
        call(
            &app,
            auth(Req::get().uri(&format!("{url}?link=")), &w.api, w.alice)
        )
        .await
        .0,
        200
    );
    // The row's rules still apply to the link's user: once deleted, nothing.
    let id = v["id"].as_str().unwrap();
    assert_eq!(
        send(
            &app,
            auth(
                Req::delete().uri(&format!("/api/pets/{id}")),
                &w.api,
                w.alice
            )
        )
        .await
        .0,
        204
    );
    assert_eq!(call(&app, Req::get().uri(&link)).await.0, 404);
}

async fn a_signed_link_expires_on(t: TestDb, store: Store) {
    let cfg = config(&t, &store).with(|c| c.ops.files_link_seconds = 0);
    let db = t.open(&cfg).await;
    let ddl = match db.backend() {
        Backend::Sqlite => DDL_SQLITE,
        Backend::Postgres => DDL_PG,
    };
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(ddl).await).unwrap();
    drop(conn);
    let alice = users::create_user(&db, "alice@example.com", "some-pass", true, 4)
        .await
        .unwrap();
    let api = build(cfg, db).unwrap();
    let w = World {
        api,
        data: t.data_dir(),
        store,
        alice,
        bob: alice,
    };
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, png(10, 1)).await;
    let url = v["photo"]["url"].as_str().unwrap().to_owned();
    let (s, made) = send(
        &app,
        auth(Req::post().uri(&format!("{url}/link")), &w.api, w.alice),
    )
    .await;
    assert_eq!(s, 200, "{made}");
    // Valid for no whole second: past the next second boundary it is refused.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(
        call(&app, Req::get().uri(made["url"].as_str().unwrap()))
            .await
            .0,
        401
    );
}

async fn a_caller_the_operation_refuses_stores_nothing_on(t: TestDb) {
    let mut w = world(&t, &Store::Local).await;
    w.api = w
        .api
        .mount(Card::blueprint("/api/staff-cards/").admin_only([crudforge::crud::Operation::Post]))
        .unwrap();
    let app = test::init_service(w.api.app()).await;
    let pets = w.data.join("files").join("pets");
    let cards = w.data.join("files").join("cards");
    let photo = || {
        vec![
            data(json!({"name": "Rex", "shared": false})),
            file("photo", "rex.png", "image/png", png(10 * 1024, 1)),
        ]
    };
    let refused = |status| Watched {
        status,
        read: false,
        uploads: Vec::new(),
    };
    // Anonymous: 401 before the body is read; no upload started, nothing stored.
    let got = call_watching(&app, Req::post().uri("/api/pets/"), &photo(), pets.clone()).await;
    assert_eq!(got, refused(401));
    // A user the operation refuses (administrators only): 403, the same.
    let picture = [
        data(json!({"title": "Card"})),
        file("picture", "c.png", "image/png", png(10 * 1024, 1)),
    ];
    let req = auth(Req::post().uri("/api/staff-cards/"), &w.api, w.alice);
    let got = call_watching(&app, req, &picture, cards.clone()).await;
    assert_eq!(got, refused(403));
    assert_eq!(stored(&w), Vec::<String>::new());
    // The watch sees an upload under way when the caller is allowed.
    let req = auth(Req::post().uri("/api/pets/"), &w.api, w.alice);
    let got = call_watching(&app, req, &photo(), pets.clone()).await;
    assert_eq!(
        (got.status, got.read, got.uploads.len()),
        (201, true, 1),
        "{got:?}"
    );
    let held = stored(&w);
    assert_eq!(held.len(), 1, "{held:?}");
    // An anonymous update of that pet: 401, the body unread.
    let (_, list) = send(&app, auth(Req::get().uri("/api/pets/"), &w.api, w.alice)).await;
    let pet_id = list["data"][0]["id"].as_str().unwrap().to_owned();
    let got = call_watching(
        &app,
        Req::patch().uri(&format!("/api/pets/{pet_id}")),
        &photo()[1..],
        pets.clone(),
    )
    .await;
    assert_eq!(got, refused(401));
    assert_eq!(stored(&w), held);
}

async fn concurrent_first_requests_for_a_thumbnail_decode_it_once_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    // Small on disk, large once decoded: long enough a decode for the requests to meet.
    let photo = real_png(1800, 1800);
    assert!(photo.len() < 64 * 1024, "{}", photo.len());
    let v = pet_with_photo(&app, &w, w.alice, false, photo).await;
    let photo_id = v["photo"]["id"].as_str().unwrap().to_owned();
    let thumb = format!("{}?thumb=16x16", v["photo"]["url"].as_str().unwrap());
    let (lines, guard) = crudforge_tests::logs::capture(tracing::Level::DEBUG);
    let answers = futures_util::future::join_all((0..8).map(|_| {
        let req = auth(Req::get().uri(&thumb), &w.api, w.alice).to_request();
        test::call_service(&app, req)
    }))
    .await;
    let mut bodies = Vec::new();
    for resp in answers {
        assert_eq!(resp.status().as_u16(), 200);
        bodies.push(test::read_body(resp).await);
    }
    drop(guard);
    assert!(bodies.iter().all(|b| *b == bodies[0]));
    let text = lines.text();
    let decodes = text
        .lines()
        .filter(|l| l.contains("making a thumbnail") && l.contains(&photo_id))
        .count();
    assert_eq!(decodes, 1, "{text}");
}

async fn a_signed_link_ends_with_the_sessions_it_was_made_in_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, png(10, 1)).await;
    let url = v["photo"]["url"].as_str().unwrap().to_owned();
    let token_at = |version: i64| {
        let tokens = &w.api.state().tokens;
        let (token, _) = tokens
            .issue_versioned(w.alice, crudforge::auth::TokenKind::Access, 600, version)
            .unwrap();
        format!("Bearer {token}")
    };
    let link_with = async |bearer: String| {
        let req = Req::post()
            .uri(&format!("{url}/link"))
            .insert_header(("authorization", bearer));
        let (s, made) = send(&app, req).await;
        assert_eq!(s, 200, "{made}");
        made["url"].as_str().unwrap().to_owned()
    };
    let before = link_with(token_at(0)).await;
    assert_eq!(call(&app, Req::get().uri(&before)).await.0, 200);
    // A logout everywhere: the link made before is refused as an expired one is.
    users::end_sessions(w.api.db(), w.alice).await.unwrap();
    let (s, _, body) = call(&app, Req::get().uri(&before)).await;
    assert_eq!(s, 401);
    assert!(String::from_utf8_lossy(&body).contains("invalid or has expired"));
    // One made after works, until the password changes.
    let after = link_with(token_at(1)).await;
    assert_eq!(call(&app, Req::get().uri(&after)).await.0, 200);
    users::set_password(w.api.db(), w.alice, "another-pass", 4)
        .await
        .unwrap();
    assert_eq!(call(&app, Req::get().uri(&after)).await.0, 401);
    assert_eq!(call(&app, Req::get().uri(&before)).await.0, 401);
    let again = link_with(token_at(2)).await;
    assert_eq!(call(&app, Req::get().uri(&again)).await.0, 200);
}

async fn thumbnails_are_made_once_under_the_rules_and_refuse_bombs_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, false, real_png(64, 48)).await;
    let id = v["id"].as_str().unwrap().to_owned();
    let photo_id = v["photo"]["id"].as_str().unwrap().to_owned();
    let url = v["photo"]["url"].as_str().unwrap().to_owned();
    let thumb = format!("{url}?thumb=16x16");
    let (s, h, body) = call(&app, auth(Req::get().uri(&thumb), &w.api, w.alice)).await;
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
    assert_eq!(h.get("content-type").unwrap(), "image/png");
    assert_eq!(h.get("x-content-type-options").unwrap(), "nosniff");
    let small = image::load_from_memory(&body).unwrap();
    assert_eq!((small.width(), small.height()), (16, 12));
    let etag = h.get("etag").unwrap().to_str().unwrap().to_owned();
    // Kept beside its file, and served from there the next time.
    assert!(
        stored(&w)
            .iter()
            .any(|k| k.starts_with(&format!("pets/{photo_id}.thumbs"))),
        "{:?}",
        stored(&w)
    );
    let (s, _, again) = call(&app, auth(Req::get().uri(&thumb), &w.api, w.alice)).await;
    assert_eq!((s, again), (200, body));
    let (s, _, _) = call(
        &app,
        auth(Req::get().uri(&thumb), &w.api, w.alice).insert_header(("if-none-match", etag)),
    )
    .await;
    assert_eq!(s, 304);
    // Only the declared boxes, only for members that declare them, only for readers.
    assert_eq!(
        call(
            &app,
            auth(
                Req::get().uri(&format!("{url}?thumb=99x99")),
                &w.api,
                w.alice
            )
        )
        .await
        .0,
        400
    );
    let papers = v["papers"]["url"].as_str().unwrap();
    assert_eq!(
        call(
            &app,
            auth(
                Req::get().uri(&format!("{papers}?thumb=16x16")),
                &w.api,
                w.alice
            )
        )
        .await
        .0,
        400
    );
    assert_eq!(
        call(&app, auth(Req::get().uri(&thumb), &w.api, w.bob))
            .await
            .0,
        404
    );
    // A bomb is stored (it is a PNG) but no thumbnail is made of it: 422 before decoding.
    let req = multipart(
        auth(
            Req::patch().uri(&format!("/api/pets/{id}")),
            &w.api,
            w.alice,
        ),
        &[file(
            "photo",
            "bomb.png",
            "image/png",
            bomb_png(100_000, 100_000),
        )],
    );
    let (s, replaced) = send(&app, req).await;
    assert_eq!(s, 200, "{replaced}");
    let bomb_url = replaced["photo"]["url"].as_str().unwrap();
    let (s, problem) = send(
        &app,
        auth(
            Req::get().uri(&format!("{bomb_url}?thumb=16x16")),
            &w.api,
            w.alice,
        ),
    )
    .await;
    assert_eq!(s, 422, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("pixels"),
        "{problem}"
    );
    // The replaced photo's thumbnails went with it.
    assert!(
        !stored(&w).iter().any(|k| k.contains(&photo_id)),
        "{:?}",
        stored(&w)
    );
}

async fn the_description_documents_uploads_and_downloads_on(t: TestDb, store: Store) {
    let w = world(&t, &store).await;
    let app = test::init_service(w.api.app()).await;
    let (s, _, body) = call(&app, Req::get().uri("/openapi.json")).await;
    assert_eq!(s, 200);
    let spec: Value = serde_json::from_slice(&body).unwrap();
    let create = &spec["paths"]["/api/pets/"]["post"]["requestBody"]["content"];
    let form = &create["multipart/form-data"];
    assert_eq!(
        form["schema"]["properties"]["photo"]["format"], "binary",
        "{create}"
    );
    assert_eq!(
        form["schema"]["properties"]["data"]["$ref"],
        "#/components/schemas/PetCreate"
    );
    assert_eq!(form["encoding"]["data"]["contentType"], "application/json");
    assert_eq!(
        form["encoding"]["photo"]["contentType"],
        "image/png, image/jpeg"
    );
    // The JSON body never carries a file member.
    let json_schema = &spec["components"]["schemas"]["PetCreate"];
    assert!(
        json_schema["properties"]["photo"].is_null(),
        "{json_schema}"
    );
    assert!(
        spec["paths"]["/api/pets/{id}"]["patch"]["requestBody"]["content"]["multipart/form-data"]
            .is_object()
    );
    // A list member: an array of binary parts, bounded; an update keeps a list of ids.
    let album = &form["schema"]["properties"]["album"];
    assert_eq!(album["type"], "array", "{album}");
    assert_eq!(album["maxItems"], 3, "{album}");
    assert_eq!(album["items"]["format"], "binary", "{album}");
    assert!(
        json_schema["properties"]["album"].is_null(),
        "{json_schema}"
    );
    let update = &spec["components"]["schemas"]["PetUpdate"]["properties"]["album"];
    assert_eq!(update["items"]["format"], "uuid", "{update}");
    // Answers describe the file's metadata (a list's, as an array of it).
    let file = &spec["components"]["schemas"]["Pet"]["properties"]["photo"];
    for member in ["id", "name", "size", "type", "url"] {
        assert!(file["properties"][member].is_object(), "{member}: {file}");
    }
    let list = &spec["components"]["schemas"]["Pet"]["properties"]["album"];
    assert_eq!(list["type"], "array", "{list}");
    assert!(list["items"]["properties"]["url"].is_object(), "{list}");
    let download = &spec["paths"]["/api/pets/{id}/files/{file_id}"]["get"];
    assert_eq!(download["operationId"], "downloadPetFile");
    for t in ["image/png", "image/jpeg", "application/pdf"] {
        assert_eq!(
            download["responses"]["200"]["content"][t]["schema"]["format"], "binary",
            "{t}"
        );
    }
    assert!(download["responses"]["206"].is_object() && download["responses"]["416"].is_object());
    // The thumbnails its members declare, as the `thumb` parameter's values.
    let thumb = download["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "thumb")
        .unwrap_or_else(|| panic!("no thumb parameter: {download}"));
    assert_eq!(thumb["schema"]["enum"], json!(["16x16"]), "{thumb}");
    let link = &spec["paths"]["/api/pets/{id}/files/{file_id}/link"]["post"];
    assert_eq!(link["operationId"], "linkPetFile");
    // The cards have no GET restrictions but their own download too.
    assert!(spec["paths"]["/api/cards/{id}/files/{file_id}"]["get"].is_object());
    if let Err(e) = crudforge_tests::tools::openapi_spec_validator(&body) {
        panic!("openapi-spec-validator rejects the description: {e}");
    }
}

/// Downloads with an access of their own: the owner's alone, though every signed-in user
/// reads a shared pet (and its file's metadata); signed links follow it too.
async fn downloads_follow_their_own_access_on(t: TestDb, store: Store) {
    use crudforge::perms::{Door, DoorAccess};
    let pets =
        Pet::blueprint("/api/pets/").door(Door::Download, DoorAccess::expr("owner_id = @me"));
    let w = world_mounting(&t, &store, |_| {}, pets).await;
    let app = test::init_service(w.api.app()).await;
    let v = pet_with_photo(&app, &w, w.alice, true, png(10, 1)).await;
    let id = v["id"].as_str().unwrap();
    let url = v["photo"]["url"].as_str().unwrap().to_owned();
    let (s, seen) = send(
        &app,
        auth(Req::get().uri(&format!("/api/pets/{id}")), &w.api, w.bob),
    )
    .await;
    assert_eq!(s, 200, "{seen}");
    assert_eq!(seen["photo"]["url"], url.as_str());
    let (s, _, body) = call(&app, auth(Req::get().uri(&url), &w.api, w.bob)).await;
    assert_eq!(s, 404, "{}", String::from_utf8_lossy(&body));
    assert_eq!(
        send(
            &app,
            auth(Req::post().uri(&format!("{url}/link")), &w.api, w.bob)
        )
        .await
        .0,
        404
    );
    let (s, _, body) = call(&app, auth(Req::get().uri(&url), &w.api, w.alice)).await;
    assert_eq!((s, body), (200, png(10, 1)));
    // The description says so, and names the signed link as the other credential.
    let spec: Value = serde_json::to_value(w.api.openapi()).unwrap();
    let download = &spec["paths"]["/api/pets/{id}/files/{file_id}"]["get"];
    let who = download["description"].as_str().unwrap();
    assert!(who.contains("Who may call: signed-in users on the items where (`shared` is true or `owner_id` is the caller's id) and `owner_id` is the caller's id"), "{who}");
    assert_eq!(
        download["security"],
        json!([{"bearerAuth": []}, {"signedLink": []}])
    );
    assert_eq!(
        spec["components"]["securitySchemes"]["signedLink"]["in"],
        "query"
    );
    assert!(download["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["name"] != "link"));
}

backend_tests! {
    async fn downloads_follow_their_own_access(t) {
        downloads_follow_their_own_access_on(t, Store::Local).await;
    }

    async fn an_upload_is_stored_privately_and_downloads_with_safe_headers(t) {
        an_upload_is_stored_privately_and_downloads_with_safe_headers_on(t, Store::Local).await;
    }

    async fn an_upload_is_stored_privately_and_downloads_with_safe_headers_on_s3(t) {
        if let Some(store) = Store::s3() {
            an_upload_is_stored_privately_and_downloads_with_safe_headers_on(t, store).await;
        }
    }

    async fn a_caller_who_may_not_read_the_row_or_member_gets_no_file(t) {
        a_caller_who_may_not_read_the_row_or_member_gets_no_file_on(t, Store::Local).await;
    }

    async fn a_caller_who_may_not_read_the_row_or_member_gets_no_file_on_s3(t) {
        if let Some(store) = Store::s3() {
            a_caller_who_may_not_read_the_row_or_member_gets_no_file_on(t, store).await;
        }
    }

    async fn disguised_oversized_or_client_written_files_are_refused_and_leave_nothing(t) {
        disguised_oversized_or_client_written_files_are_refused_and_leave_nothing_on(t, Store::Local).await;
    }

    async fn disguised_oversized_or_client_written_files_are_refused_and_leave_nothing_on_s3(t) {
        if let Some(store) = Store::s3() {
            disguised_oversized_or_client_written_files_are_refused_and_leave_nothing_on(t, store).await;
        }
    }

    async fn replacing_removing_and_deleting_remove_the_old_file_after_commit(t) {
        replacing_removing_and_deleting_remove_the_old_file_after_commit_on(t, Store::Local).await;
    }

    async fn replacing_removing_and_deleting_remove_the_old_file_after_commit_on_s3(t) {
        if let Some(store) = Store::s3() {
            replacing_removing_and_deleting_remove_the_old_file_after_commit_on(t, store).await;
        }
    }

    async fn a_soft_deleted_row_keeps_its_file_until_purged(t) {
        a_soft_deleted_row_keeps_its_file_until_purged_on(t, Store::Local).await;
    }

    async fn a_soft_deleted_row_keeps_its_file_until_purged_on_s3(t) {
        if let Some(store) = Store::s3() {
            a_soft_deleted_row_keeps_its_file_until_purged_on(t, store).await;
        }
    }

    async fn files_gc_removes_old_orphans_and_keeps_held_and_young_files(t) {
        files_gc_removes_old_orphans_and_keeps_held_and_young_files_on(t, Store::Local).await;
    }

    async fn files_gc_removes_old_orphans_and_keeps_held_and_young_files_on_s3(t) {
        if let Some(store) = Store::s3() {
            files_gc_removes_old_orphans_and_keeps_held_and_young_files_on(t, store).await;
        }
    }

    async fn a_signed_link_works_without_a_header_for_its_user_alone_and_expires(t) {
        a_signed_link_works_without_a_header_for_its_user_alone_and_expires_on(t, Store::Local).await;
    }

    async fn a_signed_link_works_without_a_header_for_its_user_alone_and_expires_on_s3(t) {
        if let Some(store) = Store::s3() {
            a_signed_link_works_without_a_header_for_its_user_alone_and_expires_on(t, store).await;
        }
    }

    async fn a_signed_link_expires(t) {
        a_signed_link_expires_on(t, Store::Local).await;
    }

    async fn a_signed_link_expires_on_s3(t) {
        if let Some(store) = Store::s3() {
            a_signed_link_expires_on(t, store).await;
        }
    }

    async fn a_caller_the_operation_refuses_stores_nothing(t) {
        a_caller_the_operation_refuses_stores_nothing_on(t).await;
    }

    async fn concurrent_first_requests_for_a_thumbnail_decode_it_once(t) {
        concurrent_first_requests_for_a_thumbnail_decode_it_once_on(t, Store::Local).await;
    }

    async fn concurrent_first_requests_for_a_thumbnail_decode_it_once_on_s3(t) {
        if let Some(store) = Store::s3() {
            concurrent_first_requests_for_a_thumbnail_decode_it_once_on(t, store).await;
        }
    }

    async fn a_signed_link_ends_with_the_sessions_it_was_made_in(t) {
        a_signed_link_ends_with_the_sessions_it_was_made_in_on(t, Store::Local).await;
    }

    async fn thumbnails_are_made_once_under_the_rules_and_refuse_bombs(t) {
        thumbnails_are_made_once_under_the_rules_and_refuse_bombs_on(t, Store::Local).await;
    }

    async fn thumbnails_are_made_once_under_the_rules_and_refuse_bombs_on_s3(t) {
        if let Some(store) = Store::s3() {
            thumbnails_are_made_once_under_the_rules_and_refuse_bombs_on(t, store).await;
        }
    }

    async fn a_list_member_gains_keeps_and_removes_files_within_its_bound(t) {
        a_list_member_gains_keeps_and_removes_files_within_its_bound_on(t, Store::Local).await;
    }

    async fn a_list_member_gains_keeps_and_removes_files_within_its_bound_on_s3(t) {
        if let Some(store) = Store::s3() {
            a_list_member_gains_keeps_and_removes_files_within_its_bound_on(t, store).await;
        }
    }

    async fn the_description_documents_uploads_and_downloads(t) {
        the_description_documents_uploads_and_downloads_on(t, Store::Local).await;
    }

    async fn the_description_documents_uploads_and_downloads_on_s3(t) {
        if let Some(store) = Store::s3() {
            the_description_documents_uploads_and_downloads_on(t, store).await;
        }
    }
}

backend_tests! {
    async fn an_sqlite_backup_is_a_consistent_copy_in_the_files_storage(t) {
        let config = t.config().with(|c| {
            c.ops.sqlite_backup_interval = 3600;
            c.ops.sqlite_backup_keep = 2;
        });
        let db = t.open(&config).await;
        users::create_user(&db, "kept@example.com", "correct horse", true, 4).await.unwrap();
        let api = Api::new(config.clone(), db.clone()).unwrap();
        let folder = t.data_dir().join("files").join("crudforge_backups");
        if t.backend == Backend::Postgres {
            // PostgreSQL is backed up by its own tools: nothing is written.
            assert_eq!(api.backup_sqlite().await.unwrap(), 0);
            assert!(!folder.exists());
            return;
        }
        // Three backups, two kept.
        assert_eq!(api.backup_sqlite().await.unwrap(), 0);
        assert_eq!(api.backup_sqlite().await.unwrap(), 0);
        assert_eq!(api.backup_sqlite().await.unwrap(), 1);
        let kept: Vec<PathBuf> = std::fs::read_dir(&folder).unwrap().flatten().map(|e| e.path()).collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
        // No temporary copy is left beside the database.
        let left: Vec<_> = std::fs::read_dir(t.data_dir()).unwrap().flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".backup-")).collect();
        assert!(left.is_empty(), "{left:?}");
        // A backup is a database that opens and holds the rows.
        let copy = t.dir.path().join("restored.db");
        std::fs::copy(&kept[0], &copy).unwrap();
        let restored = Config::default().with(|c| {
            c.db.database_uri = Some(format!("sqlite://{}", copy.display()));
            c.db.data_dir = t.dir.path().join("restored");
        });
        let db = Database::connect(&restored).await.unwrap();
        assert!(users::find_by_email(&db, "kept@example.com").await.unwrap().is_some());
    }
}
