//! Helpers for the tests of blocking commands (`blocking.rs`, `streams.rs`): one command on a
//! connection, INFO's blocked-client count and a bounded wait for it, and a command run on a
//! connection of its own on another thread.

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use redis::Value;

use super::connect;

pub fn cmd(c: &mut redis::Connection, args: &[&str]) -> Value {
    let mut k = redis::cmd(args[0]);
    for a in &args[1..] {
        k.arg(*a);
    }
    k.query(c).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

pub fn blocked_clients(c: &mut redis::Connection) -> u64 {
    let text: String = redis::cmd("INFO").arg("clients").query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("blocked_clients in INFO")
}

/// Waits (bounded) until `n` clients are blocked.
pub fn until_blocked(c: &mut redis::Connection, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while blocked_clients(c) != n {
        assert!(
            Instant::now() < deadline,
            "never saw {n} blocked clients (saw {})",
            blocked_clients(c)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Runs `args` on a new connection on another thread; its reply (or error text) comes back.
pub fn spawn(url: &str, args: &[&str]) -> JoinHandle<String> {
    let url = url.to_string();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        let mut c = connect(&url);
        let mut k = redis::cmd(&args[0]);
        for a in &args[1..] {
            k.arg(a);
        }
        match k.query::<Value>(&mut c) {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("error: {e}"),
        }
    })
}
