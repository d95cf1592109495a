//! The binary starts with no configuration, serves health, the description and a docs page
//! that renders offline, and refuses malformed configuration.

use crate::harness::{chromium, cli, render, Server};

#[test]
fn zero_configuration_start_serves_health_openapi_and_docs() {
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start(cwd.path(), &[]);

    let health = server.get("/health");
    assert_eq!(health.status, 200, "{}", health.text());
    let v = health.json();
    assert_eq!(v["status"], "healthy");
    assert_eq!(v["database"], "connected");

    // The SQLite file and a generated private key live in ./data.
    assert!(cwd.path().join("data/crudforge.db").exists());
    let key = cwd.path().join("data/jwt_secret.key");
    assert!(key.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    let spec = server.get("/openapi.json");
    assert_eq!(spec.status, 200);
    assert_eq!(
        spec.json()["paths"]["/health"]["get"]["operationId"],
        "health"
    );

    let docs = server.get("/docs/");
    assert_eq!(docs.status, 200);
    assert!(docs.text().contains("swagger-ui-bundle.js"));

    let missing = server.get("/nope");
    assert_eq!(missing.status, 404);
    assert_eq!(
        missing.header("content-type"),
        Some("application/problem+json")
    );
    assert_eq!(missing.json()["instance"], "/nope");

    // The key survives a restart.
    let before = std::fs::read(&key).unwrap();
    drop(server);
    let server = Server::start(cwd.path(), &[]);
    assert_eq!(server.get("/health").status, 200);
    assert_eq!(std::fs::read(&key).unwrap(), before);
}

#[test]
fn docs_page_renders_in_a_headless_browser_without_internet() {
    let Some(browser) = chromium() else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let server = Server::start(cwd.path(), &[("API_TITLE", "Rendered Zoo".to_owned())]);
    let shot = std::env::temp_dir().join("crudforge-docs.png");
    let dom = render(&browser, &format!("{}/docs/", server.base), &shot);
    // Swagger UI has run: it fetched the description and drew the title and operations.
    assert!(dom.contains("Rendered Zoo"), "title not rendered:\n{dom}");
    assert!(dom.contains("opblock"), "no operations rendered:\n{dom}");
    assert!(
        dom.contains("/health"),
        "health operation not rendered:\n{dom}"
    );
    assert!(
        !dom.contains("Failed to load API definition"),
        "the description did not load:\n{dom}"
    );
}

#[test]
fn malformed_configuration_stops_startup_naming_the_key() {
    let cwd = tempfile::tempdir().unwrap();
    for (key, value, expect) in [
        ("JWT_ACCESS_TOKEN_EXPIRES", "abc", "seconds"),
        ("HEALTH_ENDPOINT_ENABLED", "maybe", "true or false"),
        ("JWT_SECRET_KEY", "short", "at least 32 bytes"),
        ("OPENAPI_VERSION", "2.0", "3.0.3"),
    ] {
        let out = cli(
            cwd.path(),
            &[(key, value.to_owned())],
            &["serve", "--bind", "127.0.0.1:0"],
        );
        assert!(!out.status.success(), "{key}={value} must stop start-up");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(key) && err.contains(expect), "{key}: {err}");
    }
}

#[test]
fn dotenv_is_read_from_the_working_directory_only() {
    let parent = tempfile::tempdir().unwrap();
    let cwd = parent.path().join("app");
    std::fs::create_dir(&cwd).unwrap();
    // A `.env` above the working directory is not read: its too-short key would stop start-up.
    std::fs::write(parent.path().join(".env"), "JWT_SECRET_KEY=short\n").unwrap();
    let out = cli(&cwd, &[], &["migrate"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the parent's .env must not be read: {err}"
    );
    // The working directory's own `.env` is read...
    std::fs::write(cwd.join(".env"), "JWT_SECRET_KEY=short\n").unwrap();
    let out = cli(&cwd, &[], &["migrate"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the working directory's .env is read"
    );
    assert!(
        err.contains("JWT_SECRET_KEY") && err.contains("at least 32 bytes"),
        "{err}"
    );
    // ...without overriding the environment.
    let key = ("JWT_SECRET_KEY", "k".repeat(40));
    let out = cli(&cwd, &[key], &["migrate"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the environment wins over .env: {err}"
    );
    // A malformed `.env` stops start-up naming the file.
    std::fs::write(cwd.join(".env"), "JWT_SECRET_KEY='unterminated\n").unwrap();
    let out = cli(&cwd, &[], &["migrate"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a malformed .env stops start-up");
    assert!(err.contains(".env"), "{err}");
}

#[test]
fn serves_postgres_when_configured() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let Some(db) = rt.block_on(crudforge_tests::TestDb::postgres()) else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    let env = [("ORM_DATABASE_URI", db.uri.clone())];
    let out = cli(cwd.path(), &env, &["migrate"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = Server::start(cwd.path(), &env);
    let v = server.get("/health").json();
    assert_eq!(v["database"], "connected");
    assert!(
        !cwd.path().join("data/crudforge.db").exists(),
        "no SQLite file with PostgreSQL"
    );
    drop(server);
    drop(db);
}
