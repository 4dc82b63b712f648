//! `?` on a rusqlite call inside a tool gives the model the right `error_type` (the `rusqlite`
//! feature): a lending library's tools on a real SQLite database, one per failure a database
//! has, and a busy database retried as a transient failure.
#![cfg(feature = "rusqlite")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolwright::prelude::*;

/// The library's database: members, books, loans.
#[derive(Clone)]
struct Library {
    db: Arc<Mutex<rusqlite::Connection>>,
}

impl Library {
    fn open(path: &std::path::Path) -> Library {
        let db = rusqlite::Connection::open(path).unwrap();
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS members (id TEXT PRIMARY KEY, name TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS loans (book TEXT PRIMARY KEY, member TEXT NOT NULL REFERENCES members(id));
             PRAGMA foreign_keys = ON;
             INSERT OR IGNORE INTO members VALUES ('m1', 'Ada');",
        )
        .unwrap();
        db.busy_timeout(Duration::ZERO).unwrap();
        Library {
            db: Arc::new(Mutex::new(db)),
        }
    }
}

#[toolset]
impl Library {
    /// A member's name.
    #[tool(read_only)]
    async fn member_name(&self, member: String) -> Result<String, ToolError> {
        let db = self.db.lock().unwrap();
        Ok(
            db.query_row("SELECT name FROM members WHERE id = ?1", [&member], |row| {
                row.get(0)
            })?,
        )
    }

    /// Lend a book to a member.
    #[tool(idempotent = true, retries = 2)]
    async fn lend(&self, book: String, member: String) -> Result<String, ToolError> {
        let db = self.db.lock().unwrap();
        db.execute("INSERT INTO loans VALUES (?1, ?2)", [&book, &member])?;
        Ok(format!("{book} lent to {member}"))
    }
}

fn registry(library: &Library) -> Registry {
    Registry::builder()
        .toolset(library.clone())
        .build()
        .unwrap()
}

async fn call(registry: &Registry, tool: &str, arguments: &str) -> Outcome {
    registry.call(ToolCall::new("c1", tool, arguments)).await
}

#[tokio::test]
async fn each_database_failure_is_classified_for_the_model() {
    let dir = tempdir();
    let library = Library::open(&dir.join("library.db"));
    let registry = registry(&library);

    let found = call(&registry, "member_name", r#"{"member":"m1"}"#).await;
    assert!(found.is_ok(), "{}", found.to_model_string());

    let missing = call(&registry, "member_name", r#"{"member":"m9"}"#).await;
    assert_eq!(missing.error_kind(), Some(ErrorKind::NotFound));

    let lent = call(&registry, "lend", r#"{"book":"b1","member":"m1"}"#).await;
    assert!(lent.is_ok(), "{}", lent.to_model_string());
    // The book is out: a unique constraint, `conflict`, not retried.
    let again = call(&registry, "lend", r#"{"book":"b1","member":"m1"}"#).await;
    assert_eq!(again.error_kind(), Some(ErrorKind::Conflict));
    assert_eq!(again.attempts(), 1);
    assert!(
        again.to_model_string().contains("UNIQUE"),
        "{}",
        again.to_model_string()
    );
    // No such member: a foreign key, `conflict` too.
    let stranger = call(&registry, "lend", r#"{"book":"b2","member":"m9"}"#).await;
    assert_eq!(stranger.error_kind(), Some(ErrorKind::Conflict));
}

/// Another connection holds the write lock: `unavailable`, retried (the tool is idempotent)
/// until the attempts run out, and the model told it may try again.
#[tokio::test]
async fn a_locked_database_is_transient_and_retried() {
    let dir = tempdir();
    let path = dir.join("library.db");
    let library = Library::open(&path);
    let registry = registry(&library);
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();

    let outcome = call(&registry, "lend", r#"{"book":"b3","member":"m1"}"#).await;
    assert_eq!(outcome.error_kind(), Some(ErrorKind::Unavailable));
    assert_eq!(outcome.attempts(), 3, "{}", outcome.to_model_string());
    assert!(outcome.retryable());

    holder.execute_batch("ROLLBACK").unwrap();
    let outcome = call(&registry, "lend", r#"{"book":"b3","member":"m1"}"#).await;
    assert!(outcome.is_ok(), "{}", outcome.to_model_string());
}

/// The failures a tool meets less often, each from a real SQLite call: a write the database
/// refuses (`permission_denied`), a database that cannot be opened or is not one
/// (`unavailable`), a column read as the wrong type (`invalid_result`).
#[test]
fn the_rarer_database_failures_have_their_kinds() {
    let kind = |e: rusqlite::Error| ToolError::from(e).kind();
    let db = rusqlite::Connection::open_in_memory().unwrap();
    db.execute_batch("CREATE TABLE members (id TEXT PRIMARY KEY, name TEXT); INSERT INTO members VALUES ('m1', 'Ada'); PRAGMA query_only = ON;")
        .unwrap();
    let read_only = db
        .execute("INSERT INTO members VALUES ('m2', 'Bo')", [])
        .unwrap_err();
    assert_eq!(kind(read_only), ErrorKind::PermissionDenied);

    let wrong_type = db
        .query_row("SELECT name FROM members", [], |row| row.get::<_, i64>(0))
        .unwrap_err();
    assert_eq!(kind(wrong_type), ErrorKind::InvalidResult);

    let dir = tempdir();
    let nowhere = rusqlite::Connection::open_with_flags(
        dir.join("missing").join("library.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
    )
    .unwrap_err();
    assert_eq!(kind(nowhere), ErrorKind::Unavailable);

    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, vec![0x5a_u8; 4096]).unwrap();
    let not_a_database = rusqlite::Connection::open(&garbage)
        .and_then(|db| {
            db.query_row("SELECT count(*) FROM sqlite_master", [], |row| {
                row.get::<_, i64>(0)
            })
        })
        .unwrap_err();
    assert_eq!(kind(not_a_database), ErrorKind::Unavailable);
}

/// A directory of this test's own under the system's temporary directory: the process id and
/// a counter, so that two tests of this binary never share a database (a clock read could give
/// both the same name, and one test's lock would then fail the other's calls).
fn tempdir() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "toolwright-db-{}-{n}-{}",
        std::process::id(),
        clock_suffix()
    ));
    // A directory left by an earlier process of the same id is not reused.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn clock_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}
