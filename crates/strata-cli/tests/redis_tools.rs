//! Debian's redis-tools against `strata serve`: redis-cli (commands as arguments, from stdin,
//! RESP3, --scan, --pipe, SHUTDOWN) and a short, bounded redis-benchmark run. Skipped when the
//! tools are missing unless `STRATA_REQUIRE_REDIS_TOOLS=1` (set by `scripts/test.sh`).

mod common;

use std::process::Command;
use std::time::Duration;

use common::{run_with_timeout, tool, ServerProcess};

fn cli(server: &ServerProcess, args: &[&str]) -> String {
    cli_stdin(server, args, b"")
}

fn cli_stdin(server: &ServerProcess, args: &[&str], stdin: &[u8]) -> String {
    let out = run_with_timeout(
        Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &server.port()])
            .args(args),
        stdin,
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn redis_cli() {
    if tool("redis-cli").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path(), &[]);
    assert_eq!(cli(&server, &["PING"]), "PONG\n");
    assert_eq!(cli(&server, &["SET", "greeting", "hello world"]), "OK\n");
    assert_eq!(cli(&server, &["GET", "greeting"]), "hello world\n");
    assert_eq!(cli(&server, &["--no-raw", "GET", "nope"]), "(nil)\n");
    assert_eq!(cli(&server, &["INCRBY", "n", "5"]), "5\n");
    assert_eq!(cli(&server, &["--no-raw", "INCR", "n"]), "(integer) 6\n");
    assert_eq!(
        cli(&server, &["--no-raw", "INCR", "greeting"]),
        "(error) ERR value is not an integer or out of range\n"
    );
    assert_eq!(
        cli(&server, &["--no-raw", "NOSUCH", "x"]),
        "(error) ERR unknown command 'NOSUCH', with args beginning with: 'x' \n"
    );
    // Commands from stdin, one per line.
    assert_eq!(
        cli_stdin(&server, &[], b"SET a 1\nAPPEND a 23\nGET a\nSTRLEN a\n"),
        "OK\n3\n123\n3\n"
    );
    // RESP3.
    let hello = cli(&server, &["-3", "HELLO", "3"]);
    assert!(hello.contains("proto 3\n"), "{hello}");
    assert_eq!(cli(&server, &["-3", "--no-raw", "GET", "nope"]), "(nil)\n");
    let cfg = cli(&server, &["-3", "--no-raw", "CONFIG", "GET", "appendonly"]);
    assert!(cfg.contains("\"appendonly\" => \"yes\""), "{cfg}");
    // --pipe: mass insertion over a raw RESP stream (redis-cli appends an ECHO and waits for it).
    let mut payload = Vec::new();
    for i in 0..5000 {
        let k = format!("bulk:{i}");
        let v = format!("value-{i}");
        payload.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n{v}\r\n",
                k.len(),
                v.len()
            )
            .as_bytes(),
        );
    }
    let piped = cli_stdin(&server, &["--pipe"], &payload);
    assert!(piped.contains("errors: 0, replies: 5000"), "{piped}");
    assert_eq!(cli(&server, &["GET", "bulk:4999"]), "value-4999\n");
    // --scan walks SCAN cursors.
    let scanned = cli(&server, &["--scan", "--pattern", "bulk:1*"]);
    let mut keys: Vec<&str> = scanned.lines().collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(
        keys.len(),
        1111,
        "bulk:1, bulk:10..19, bulk:100..199, bulk:1000..1999"
    );
    let info = cli(&server, &["INFO", "keyspace"]);
    assert!(info.contains("db0:keys=5003,"), "{info}");
    // SHUTDOWN from redis-cli stops the server cleanly.
    let _ = run_with_timeout(
        Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &server.port(), "SHUTDOWN"]),
        b"",
        Duration::from_secs(30),
    );
    let status = server.wait(Duration::from_secs(60));
    assert!(status.success(), "{status:?}");
    assert!(server.log_text().contains("engine flushed and closed"));
}

#[test]
fn redis_benchmark_short_run() {
    if tool("redis-benchmark").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &["--log-level", "warn"]);
    let out = run_with_timeout(
        Command::new("redis-benchmark").args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.port(),
            "-t",
            "set,get,incr,mset",
            "-n",
            "5000",
            "-r",
            "1000",
            "-P",
            "8",
            "-c",
            "4",
            "--csv",
        ]),
        b"",
        Duration::from_secs(180),
    );
    assert!(out.status.success(), "{out:?}");
    let csv = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("WARNING"), "{stderr}");
    for test in ["SET", "GET", "INCR", "MSET (10 keys)"] {
        let line = csv
            .lines()
            .find(|l| l.starts_with(&format!("\"{test}\",")))
            .unwrap_or_else(|| panic!("no {test} line in {csv}"));
        let rps: f64 = line
            .split(',')
            .nth(1)
            .unwrap()
            .trim_matches('"')
            .parse()
            .unwrap();
        assert!(rps > 0.0, "{line}");
    }
    let mut c = server.conn();
    // Keys are key:<rand> (SET, MSET) and counter:<rand> (INCR), with -r 1000.
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert!(n > 0 && n <= 2000, "{n}");
    let counters: Vec<String> = redis::cmd("KEYS").arg("counter:*").query(&mut c).unwrap();
    let values: Vec<i64> = redis::cmd("MGET").arg(&counters).query(&mut c).unwrap();
    assert_eq!(
        values.iter().sum::<i64>(),
        5000,
        "every INCR of the benchmark counted once"
    );
}
