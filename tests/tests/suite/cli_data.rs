//! The command line's `export` and `import` (feature `export`) on both backends: a resource
//! named by its path segment or its name, an export as CSV to a file and as NDJSON on stdout
//! with the user's rights (a member only administrators read is absent for an ordinary user),
//! an import of a CSV file creating the rows as that user, a refused import naming the line and
//! member, writing nothing and exiting non-zero; no progress bar on a captured console.
#![allow(missing_docs, clippy::unwrap_used)]

use crudforge::cli::{App, BoxError, Console};
use crudforge::users;
use crudforge::{with_conn, Api, Config, Database, Resource};
use crudforge_tests::backend_tests;
use crudforge_tests::parts::{parts, Part};
use diesel::prelude::*;
use diesel_async::SimpleAsyncConnection;
use serde_json::Value;
use std::path::PathBuf;
use uuid::Uuid;

fn build(config: Config, db: Database) -> Result<Api, BoxError> {
    Ok(Api::new(config, db)?.mount(Part::blueprint("/api/parts/").export().import())?)
}

async fn setup(t: &crudforge_tests::TestDb) -> (App, Database) {
    let config = t.config().with(|c| c.auth.bcrypt_cost = 4);
    let db = t.open(&config).await;
    crudforge_tests::parts::create_table(&db).await;
    for email in ["admin@example.com", "alice@example.com"] {
        users::create_user(&db, email, "some-pass", true, 4)
            .await
            .unwrap();
    }
    let (admin, _, _) = users::find_by_email(&db, "admin@example.com")
        .await
        .unwrap()
        .unwrap();
    users::grant_role(&db, admin, "ADMIN", None).await.unwrap();
    (App::new("parts-app", build).config(config), db)
}

async fn execute(db: &Database, sql: &str) {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| c.batch_execute(sql).await).unwrap();
}

async fn count(db: &Database) -> i64 {
    let mut conn = db.get().await.unwrap();
    with_conn!(conn, |c| {
        diesel_async::RunQueryDsl::get_result::<i64>(parts::table.count(), c).await
    })
    .unwrap()
}

/// Runs `args`; returns the status, stdout and stderr.
async fn run(app: &App, args: &[&str]) -> (u8, String, String) {
    let mut console = Console::captured("");
    let mut argv = vec!["parts-app"];
    argv.extend_from_slice(args);
    let status = app.run(argv, &mut console).await;
    (status, console.output(), console.errors())
}

/// A file of a fresh folder of its own.
fn file(name: &str, content: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("crudforge-cli-data-{}", Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

backend_tests! {
    async fn export_and_import_from_the_command_line(t) {
        let (app, db) = setup(&t).await;
        let csv = file("parts.csv", "name,qty,stocked\nbolt,5,true\nnut,7,false\n");
        let got = run(&app, &["import", "parts", csv.to_str().unwrap(), "--user", "alice@example.com"]).await;
        assert_eq!(got, (0, String::new(), "imported 2 rows\n".to_owned()));
        assert_eq!(count(&db).await, 2);
        execute(&db, "UPDATE parts SET staff_note = 'secret note'").await;

        // CSV to a file, as alice: her rows, never the staff note.
        let out = csv.with_file_name("out.csv");
        let got = run(&app, &["export", "parts", "--user", "alice@example.com", "--output", out.to_str().unwrap()]).await;
        assert_eq!(got, (0, String::new(), "exported 2 rows\n".to_owned()));
        let text = std::fs::read_to_string(&out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].contains("name") && !lines[0].contains("staff_note"), "{text}");
        assert!(text.contains("bolt") && text.contains("nut") && !text.contains("secret"), "{text}");
        assert!(!out.with_file_name("out.csv.part").exists());

        // The administrator reads the staff note.
        let admin_out = csv.with_file_name("admin.csv");
        let got = run(&app, &["export", "parts", "--user", "admin@example.com", "--output", admin_out.to_str().unwrap()]).await;
        assert_eq!(got.0, 0, "{got:?}");
        let text = std::fs::read_to_string(&admin_out).unwrap();
        assert!(text.lines().next().unwrap().contains("staff_note"), "{text}");

        // NDJSON on stdout, the resource named by its name, with a filter.
        let got = run(&app, &["export", "Part", "--user", "alice@example.com", "--format", "ndjson", "--filter", "qty > 6"]).await;
        assert_eq!(got.0, 0, "{got:?}");
        assert_eq!(got.2, "exported 1 rows\n");
        let items: Vec<Value> = got.1.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(items.len(), 1, "{}", got.1);
        assert_eq!(items[0]["name"], "nut");
        assert!(items[0].get("staff_note").is_none(), "{}", got.1);

        // A bad line: nothing written, the line and member named, a non-zero status.
        let bad = file("bad.csv", "name,qty,stocked\nwasher,3,true\nscrew,many,true\n");
        let (status, out, err) = run(&app, &["import", "parts", bad.to_str().unwrap(), "--user", "alice@example.com"]).await;
        assert_eq!(status, 1, "{err}");
        assert_eq!(out, "");
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines[0].starts_with("line 3, qty: "), "{err}");
        assert!(lines.last().unwrap().starts_with("error: refused (422)"), "{err}");
        assert_eq!(count(&db).await, 2);

        // Chunked: the good chunks are written, the refused line named, the status non-zero.
        let chunked = file("chunked.csv", "name,qty,stocked\nwasher,3,true\nscrew,many,true\npin,1,false\n");
        let (status, out, err) = run(&app, &["import", "parts", chunked.to_str().unwrap(), "--user", "alice@example.com", "--chunk-size", "1"]).await;
        assert_eq!((status, out.as_str()), (1, ""), "{err}");
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines[0].starts_with("line 3, qty: "), "{err}");
        assert_eq!(lines[1], "imported 2 rows", "{err}");
        assert!(lines[2].starts_with("error: 1 rows refused"), "{err}");
        assert_eq!(count(&db).await, 4);
        let _ = std::fs::remove_dir_all(chunked.parent().unwrap());

        // A resource no blueprint mounts: the known ones are listed.
        let (status, _, err) = run(&app, &["export", "widgets", "--user", "alice@example.com"]).await;
        assert_eq!(status, 1);
        assert!(err.contains("parts (Part)"), "{err}");
        // No such user.
        let (status, _, err) = run(&app, &["export", "parts", "--user", "nobody@example.com"]).await;
        assert_eq!(status, 1);
        assert!(err.contains("no user with e-mail"), "{err}");
        let _ = std::fs::remove_dir_all(csv.parent().unwrap());
        let _ = std::fs::remove_dir_all(bad.parent().unwrap());
    }

    async fn an_export_file_is_made_new_and_private(t) {
        let (app, _db) = setup(&t).await;
        let csv = file("parts.csv", "name,qty,stocked\nbolt,5,true\n");
        let got = run(&app, &["import", "parts", csv.to_str().unwrap(), "--user", "alice@example.com"]).await;
        assert_eq!(got.0, 0, "{got:?}");

        // A fresh export is readable by its owner alone.
        let out = csv.with_file_name("out.csv");
        let got = run(&app, &["export", "parts", "--user", "alice@example.com", "--output", out.to_str().unwrap()]).await;
        assert_eq!(got.0, 0, "{got:?}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{mode:o}");
        }

        // A symbolic link planted at the part file: refused, its target untouched.
        #[cfg(unix)]
        {
            let target = file("victim.txt", "keep me");
            let planted = csv.with_file_name("planted.csv");
            let part = csv.with_file_name("planted.csv.part");
            std::os::unix::fs::symlink(&target, &part).unwrap();
            let (status, _, err) = run(&app, &["export", "parts", "--user", "alice@example.com", "--output", planted.to_str().unwrap()]).await;
            assert_eq!(status, 1, "{err}");
            assert!(err.contains("planted.csv.part") && err.contains("exists"), "{err}");
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
            assert!(std::fs::symlink_metadata(&part).unwrap().file_type().is_symlink());
            assert!(!planted.exists());
            let _ = std::fs::remove_dir_all(target.parent().unwrap());
        }
        let _ = std::fs::remove_dir_all(csv.parent().unwrap());
    }
}
