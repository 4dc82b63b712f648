//! A throwaway `redis-server` on loopback for tests and benches: an ephemeral port, no
//! persistence, killed when dropped.
//!
//! When `redis-server` is not on PATH, [`RedisServer::start`] says so loudly and returns `None`
//! so the caller skips, unless `TOOLWRIGHT_REQUIRE_REDIS=1`, which makes a missing server a
//! failure (CI sets it).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The environment variable that turns a missing `redis-server` into a failure.
pub const REQUIRE: &str = "TOOLWRIGHT_REQUIRE_REDIS";

pub fn required() -> bool {
    std::env::var(REQUIRE).is_ok_and(|v| v == "1")
}

/// A running `redis-server`, killed on drop.
pub struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
    binary: PathBuf,
    persist: bool,
}

impl RedisServer {
    /// Starts a server, or returns `None` (after saying why on stderr) when `redis-server` is
    /// not installed and `TOOLWRIGHT_REQUIRE_REDIS` is not `1`.
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(false)
    }

    /// A server that writes every change to an append-only file before answering
    /// (`appendfsync always`), so [`restart`](Self::restart) keeps what it acknowledged.
    pub fn start_persistent() -> Option<RedisServer> {
        RedisServer::start_with(true)
    }

    fn start_with(persist: bool) -> Option<RedisServer> {
        let Some(binary) = find_on_path("redis-server") else {
            if required() {
                panic!(
                    "{REQUIRE}=1 but redis-server is not on PATH: install it \
                     (apt-get install redis-server) or unset {REQUIRE}"
                );
            }
            // Straight to stderr, past the test harness's capture, once per test binary.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                let bar = "!".repeat(78);
                let _ = writeln!(
                    std::io::stderr(),
                    "\n{bar}\n!!! redis-server is not on PATH: the Redis idempotency tests are \
                     SKIPPED.\n!!! Install it (apt-get install redis-server) to run them; \
                     {REQUIRE}=1 makes this a failure (CI sets it).\n{bar}\n"
                );
            });
            return None;
        };
        // Redis has no `--port 0`: take a free port from the kernel, release it, and retry on
        // the rare race where someone else grabs it first.
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir()
                .join(format!("toolwright-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("create the redis-server work dir");
            let child = spawn(&binary, port, &dir, persist);
            let mut server = RedisServer {
                child,
                port,
                dir,
                binary: binary.clone(),
                persist,
            };
            match server.wait_ready() {
                Ok(()) => return Some(server),
                Err(e) => last_error = e,
            }
        }
        panic!("redis-server did not start: {last_error}");
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Kills the server (SIGKILL: no goodbye to its clients) and starts it again on the same
    /// port and directory; waits until it answers.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        for _ in 0..5 {
            self.child = spawn(&self.binary, self.port, &self.dir, self.persist);
            if self.wait_ready().is_ok() {
                return;
            }
        }
        panic!("redis-server did not come back on port {}", self.port);
    }

    /// Kills the server for good: its clients see a refused connection from now on.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Polls until *this* server answers (bounded: five seconds at most). The reply to `INFO
    /// server` must name our child's pid, so a stranger that took the port is never mistaken
    /// for it.
    fn wait_ready(&mut self) -> Result<(), String> {
        let pid = format!("process_id:{}\r\n", self.child.id());
        for _ in 0..500 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("redis-server exited with {status}"));
            }
            if let Some(info) = query(self.port, b"INFO server\r\n") {
                if info.contains(&pid) {
                    return Ok(());
                }
                return Err(format!("port {} is served by another process", self.port));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err("no answer within 5 s".to_owned())
    }
}

/// Sends one inline command and reads a bulk-string reply.
fn query(port: u16, command: &[u8]) -> Option<String> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    stream.write_all(command).ok()?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        reply.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&reply);
        let (header, body) = text.split_once("\r\n")?;
        let len: usize = header.strip_prefix('$')?.parse().ok()?;
        if body.len() >= len {
            return Some(body[..len].to_owned());
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn spawn(binary: &Path, port: u16, dir: &Path, persist: bool) -> Child {
    let persistence: &[&str] = if persist {
        &[
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ]
    } else {
        &["--save", "", "--appendonly", "no"]
    };
    Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(persistence)
        .arg("--dir")
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redis-server")
}

fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}
