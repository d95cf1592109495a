//! files-bench: file members (the `files` feature) over real HTTP on loopback, against plain
//! actix-web handlers on the same server: a 1 MiB upload (`multipart/form-data` create of a
//! row with a file member, against a handler that streams the body to a file) and a 1 MiB
//! download (`GET <item>/files/<id>` under the read rules, against `actix-files` serving the
//! same bytes); then the server's memory during one 100 MiB upload (it streams: the process
//! should not grow by the file's size).
//!
//! ```text
//! cargo build --release -p crud-bench --bin files-bench
//! target/release/files-bench
//! ```
//!
//! The server runs as a child process (`files-bench serve`), so that its memory is its own.
//! It is never part of `cargo test`: it is a binary, run on demand. See `docs/performance.md`.

use actix_web::{web, App, HttpResponse, HttpServer};
use chrono::{DateTime, Utc};
use crudforge::files::File;
use crudforge::{with_conn, Api, Config, Database, Resource};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use futures_util::StreamExt as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use uuid::Uuid;

diesel::table! {
    use diesel::sql_types::*;
    use crudforge::sql_types::*;

    /// Blobs.
    blobs (id) {
        /// Id.
        id -> PortableUuid,
        /// Created.
        created_at -> PortableTimestamp,
        /// Updated.
        updated_at -> PortableTimestamp,
        /// Label.
        label -> Text,
        /// The file.
        body -> Nullable<PortableJson>,
    }
}

/// A labelled file, open to anyone.
#[derive(Debug, Clone, Queryable, Selectable, Resource)]
#[diesel(table_name = blobs)]
#[resource(rules = crudforge::perms::Open)]
pub struct Blob {
    /// Identifier.
    pub id: Uuid,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// A label.
    pub label: String,
    /// The file: a PNG up to 256 MiB.
    #[resource(file(max_size = "256 MiB", types = ["image/png"]))]
    pub body: Option<File>,
}

const MIB: usize = 1 << 20;

/// A "PNG" of `len` bytes: the signature, then filler.
fn png(len: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    v.resize(len, 0x5a);
    v
}

/// `POST /plain/upload`: the body streamed to a file, the plain reference of an upload.
async fn plain_upload(dir: web::Data<PathBuf>, mut body: web::Payload) -> HttpResponse {
    let path = dir.join(format!("plain-{}", Uuid::new_v4()));
    let Ok(mut f) = std::fs::File::create(&path) else {
        return HttpResponse::InternalServerError().finish();
    };
    let mut n = 0usize;
    while let Some(chunk) = body.next().await {
        let Ok(chunk) = chunk else {
            return HttpResponse::BadRequest().finish();
        };
        n += chunk.len();
        if f.write_all(&chunk).is_err() {
            return HttpResponse::InternalServerError().finish();
        }
    }
    let _ = std::fs::remove_file(&path);
    HttpResponse::Created().body(n.to_string())
}

/// The server: the blobs resource, `actix-files` under `/static/`, the plain upload.
fn serve(dir: &Path, bind: &str) -> std::io::Result<()> {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(dir.join("static"))?;
    std::fs::write(dir.join("static/one.png"), png(MIB))?;
    actix_web::rt::System::new().block_on(async move {
        let mut config = Config::default();
        config.db.database_uri = Some(format!("sqlite://{}", dir.join("bench.db").display()));
        config.db.data_dir = dir.join("data");
        config.auth.jwt_secret_key = Some(crudforge::config::Secret::new(
            "files-bench-signing-key-0123456789abcdefghij",
        ));
        let db = Database::connect(&config).await.map_err(std::io::Error::other)?;
        db.run_migrations(None).await.map_err(std::io::Error::other)?;
        let mut conn = db.get().await.map_err(std::io::Error::other)?;
        with_conn!(conn, |c| c
            .batch_execute("CREATE TABLE IF NOT EXISTS blobs (id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, label TEXT NOT NULL, body TEXT)")
            .await)
        .map_err(std::io::Error::other)?;
        drop(conn);
        let api = Api::new(config, db)
            .map_err(std::io::Error::other)?
            .mount(Blob::blueprint("/api/blobs/"))
            .map_err(std::io::Error::other)?;
        let plain_dir = web::Data::new(dir.clone());
        let static_dir = dir.join("static");
        HttpServer::new(move || {
            App::new()
                .configure(|cfg| api.configure(cfg))
                .app_data(plain_dir.clone())
                .route("/plain/upload", web::post().to(plain_upload))
                .service(actix_files::Files::new("/static", static_dir.clone()))
        })
        .workers(1)
        .bind(bind)?
        .run()
        .await
    })
}

/// One keep-alive HTTP/1.1 connection.
struct Conn {
    stream: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Conn {
            stream: BufReader::with_capacity(256 * 1024, stream),
        }
    }

    /// Sends a request and reads the answer: status and body.
    fn call(&mut self, head: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let s = self.stream.get_mut();
        s.write_all(head.as_bytes()).expect("write head");
        s.write_all(body).expect("write body");
        let mut line = String::new();
        self.stream.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status");
        let mut len = 0usize;
        loop {
            line.clear();
            self.stream.read_line(&mut line).expect("header");
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().expect("length");
                }
            }
        }
        let mut out = vec![0; len];
        self.stream.read_exact(&mut out).expect("body");
        (status, out)
    }
}

const BOUNDARY: &str = "files-bench-boundary-7d1f";

/// The multipart body of a blob with its file.
fn multipart(file: &[u8]) -> Vec<u8> {
    let mut b = Vec::with_capacity(file.len() + 512);
    b.extend_from_slice(format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"data\"\r\nContent-Type: application/json\r\n\r\n{{\"label\": \"bench\"}}\r\n").as_bytes());
    b.extend_from_slice(format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"body\"; filename=\"b.png\"\r\nContent-Type: image/png\r\n\r\n").as_bytes());
    b.extend_from_slice(file);
    b.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    b
}

fn post(path: &str, content_type: &str, len: usize) -> String {
    format!("POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\n\r\n")
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n")
}

/// MiB per second of `n` transfers of `size` bytes taking `took`.
fn rate(n: usize, size: usize, took: Duration) -> f64 {
    (n * size) as f64 / MIB as f64 / took.as_secs_f64()
}

/// The resident and peak resident memory of `pid`, in KiB.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(rounds: usize) -> ExitCode {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let exe = std::env::current_exe().expect("own path");
    let child = Command::new(exe)
        .args(["serve", "--dir"])
        .arg(dir.path())
        .args(["--bind", &addr])
        .stdout(Stdio::null())
        .spawn()
        .expect("start the server");
    let server = Server(child);
    let started = Instant::now();
    while TcpStream::connect(&addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = server.0.id();
    let mut c = Conn::open(&addr);
    let one = png(MIB);
    let form = multipart(&one);
    let create = post(
        "/api/blobs/",
        &format!("multipart/form-data; boundary={BOUNDARY}"),
        form.len(),
    );
    let plain = post("/plain/upload", "application/octet-stream", one.len());
    // Warm-up, and one created blob to download.
    let (s, created) = c.call(&create, &form);
    assert_eq!(s, 201, "{}", String::from_utf8_lossy(&created));
    let created: serde_json::Value = serde_json::from_slice(&created).expect("json");
    let url = created["body"]["url"].as_str().expect("a url").to_owned();
    assert_eq!(c.call(&plain, &one).0, 201);
    let (s, got) = c.call(&get(&url), &[]);
    assert!(s == 200 && got == one, "download");
    let (s, got) = c.call(&get("/static/one.png"), &[]);
    assert!(s == 200 && got == one, "static");

    let mut results: Vec<(&str, Vec<f64>)> = vec![
        ("upload, multipart create with a file member", Vec::new()),
        ("upload, plain handler streaming to a file", Vec::new()),
        ("download, GET <item>/files/<id>", Vec::new()),
        ("download, actix-files", Vec::new()),
    ];
    let per_round = 50;
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..per_round {
            assert_eq!(c.call(&create, &form).0, 201);
        }
        results[0].1.push(rate(per_round, MIB, t.elapsed()));
        let t = Instant::now();
        for _ in 0..per_round {
            assert_eq!(c.call(&plain, &one).0, 201);
        }
        results[1].1.push(rate(per_round, MIB, t.elapsed()));
        let t = Instant::now();
        for _ in 0..per_round {
            assert_eq!(c.call(&get(&url), &[]).0, 200);
        }
        results[2].1.push(rate(per_round, MIB, t.elapsed()));
        let t = Instant::now();
        for _ in 0..per_round {
            assert_eq!(c.call(&get("/static/one.png"), &[]).0, 200);
        }
        results[3].1.push(rate(per_round, MIB, t.elapsed()));
    }
    println!(
        "1 MiB transfers, one keep-alive connection, {rounds} rounds of {per_round}: median MiB/s"
    );
    for (what, mut v) in results {
        v.sort_by(f64::total_cmp);
        println!("  {what:<48} {:>8.1}", v[v.len() / 2]);
    }

    // Memory during one 100 MiB upload, sampled every 5 ms from another thread.
    let (idle, _) = memory(pid);
    let big = multipart(&png(100 * MIB));
    let head = post(
        "/api/blobs/",
        &format!("multipart/form-data; boundary={BOUNDARY}"),
        big.len(),
    );
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(memory(pid).0);
                std::thread::sleep(Duration::from_millis(5));
            }
            peak
        })
    };
    let t = Instant::now();
    let (s, body) = c.call(&head, &big);
    let took = t.elapsed();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().expect("sampler");
    assert_eq!(s, 201, "{}", String::from_utf8_lossy(&body));
    println!(
        "100 MiB upload: {:.1} MiB/s; server RSS {} KiB idle, {} KiB at most during it (+{} KiB)",
        rate(1, 100 * MIB, took),
        idle,
        peak,
        peak.saturating_sub(idle)
    );
    drop(server);
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("serve") => {
            let dir = args
                .iter()
                .position(|a| a == "--dir")
                .and_then(|i| args.get(i + 1));
            let bind = args
                .iter()
                .position(|a| a == "--bind")
                .and_then(|i| args.get(i + 1));
            let (Some(dir), Some(bind)) = (dir, bind) else {
                eprintln!("usage: files-bench serve --dir DIR --bind ADDR");
                return ExitCode::FAILURE;
            };
            match serve(Path::new(dir), bind) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("files-bench serve: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            let rounds = args
                .iter()
                .position(|a| a == "--rounds")
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(5);
            run(rounds)
        }
    }
}
