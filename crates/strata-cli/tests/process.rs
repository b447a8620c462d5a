//! `strata serve` as a process: with `--sync always`, a server killed with SIGKILL under a
//! write load loses no write it acknowledged; SIGTERM and SHUTDOWN flush and close cleanly and
//! a restart serves the same data.
//! `STRATA_SEED` replays a seed; `STRATA_CRASH_ROUNDS` sets the number of kill rounds.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{Rng, ServerProcess};

const WRITERS: u64 = 3;

/// What the writers saw acknowledged.
#[derive(Default)]
struct Acked {
    /// key -> value of every acknowledged SET.
    sets: HashMap<String, String>,
    /// counter key -> (highest acknowledged INCR result, number of INCRs issued).
    counters: HashMap<String, (i64, i64)>,
}

fn writer(
    addr: String,
    t: u64,
    round: u64,
    seed: u64,
    acked: Arc<Mutex<Acked>>,
    deadline: Instant,
) -> u64 {
    let Ok(client) = redis::Client::open(addr) else {
        return 0;
    };
    let Ok(mut c) = client.get_connection_with_timeout(Duration::from_secs(10)) else {
        return 0;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    let mut rng = Rng::new(seed ^ t);
    let ctr = format!("ctr:{t}");
    let mut n = 0u64;
    while Instant::now() < deadline {
        if rng.below(4) == 0 {
            // A pipeline of SETs: acknowledged together when the replies arrive.
            let mut p = redis::pipe();
            let kvs: Vec<(String, String)> = (0..1 + rng.below(8))
                .map(|i| {
                    (
                        format!("r{round}:w{t}:{n}:{i}"),
                        format!("{n}-{}", "x".repeat(rng.below(200) as usize)),
                    )
                })
                .collect();
            for (k, v) in &kvs {
                p.cmd("SET").arg(k).arg(v);
            }
            if p.query::<()>(&mut c).is_err() {
                break;
            }
            acked.lock().unwrap().sets.extend(kvs);
        } else if rng.below(3) == 0 {
            acked
                .lock()
                .unwrap()
                .counters
                .entry(ctr.clone())
                .or_default()
                .1 += 1;
            match redis::cmd("INCR").arg(&ctr).query::<i64>(&mut c) {
                Ok(v) => {
                    let mut a = acked.lock().unwrap();
                    let e = a.counters.get_mut(&ctr).unwrap();
                    e.0 = e.0.max(v);
                }
                Err(_) => break,
            }
        } else {
            let k = format!("r{round}:w{t}:{n}");
            let v = format!("{n}-{}", "y".repeat(rng.below(300) as usize));
            if redis::cmd("SET")
                .arg(&k)
                .arg(&v)
                .query::<()>(&mut c)
                .is_err()
            {
                break;
            }
            acked.lock().unwrap().sets.insert(k, v);
        }
        n += 1;
    }
    n
}

#[test]
fn sigkill_under_load_loses_no_acknowledged_write() {
    let seed = common::seed("sigkill");
    let rounds: u64 = std::env::var("STRATA_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    // Small memtables so that flushes and compactions happen during the load too.
    let opts = [
        "--sync",
        "always",
        "--write-buffer-size",
        "128kb",
        "--log-level",
        "warn",
    ];
    let acked = Arc::new(Mutex::new(Acked::default()));
    for round in 0..rounds {
        let mut server = ServerProcess::start(dir.path(), &opts);
        let deadline = Instant::now() + Duration::from_secs(20);
        let writers: Vec<_> = (0..WRITERS)
            .map(|t| {
                let (url, acked) = (server.url(), acked.clone());
                let s = seed ^ round.wrapping_mul(0x9e37_79b9);
                std::thread::spawn(move || writer(url, t, round, s, acked, deadline))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300 + rng.below(1200)));
        server.child.kill().expect("SIGKILL"); // std's kill sends SIGKILL on Unix
        let status = server.wait(Duration::from_secs(30));
        assert!(!status.success(), "killed server must not exit cleanly");
        let ops: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
        eprintln!("round {round}: {ops} operations before SIGKILL");

        // Restart and check every acknowledged write.
        let server = ServerProcess::start(dir.path(), &opts);
        let mut c = server.conn();
        let a = acked.lock().unwrap();
        assert!(
            !a.sets.is_empty(),
            "no write was acknowledged in round {round}"
        );
        let keys: Vec<&String> = a.sets.keys().collect();
        for chunk in keys.chunks(500) {
            let mut cmd = redis::cmd("MGET");
            for k in chunk {
                cmd.arg(*k);
            }
            let vals: Vec<Option<String>> = cmd.query(&mut c).unwrap();
            for (k, v) in chunk.iter().zip(vals) {
                assert_eq!(
                    v.as_deref(),
                    Some(a.sets[*k].as_str()),
                    "round {round}: acknowledged SET {k} lost (seed {seed})"
                );
            }
        }
        for (k, (max_acked, issued)) in &a.counters {
            let v: i64 = redis::cmd("GET")
                .arg(k)
                .query::<Option<i64>>(&mut c)
                .unwrap()
                .unwrap_or(0);
            assert!(
                v >= *max_acked && v <= *issued,
                "round {round}: {k} = {v}, acknowledged {max_acked}, issued {issued}"
            );
        }
        drop(a);
        drop(c);
        drop(server); // SIGKILL again (no clean shutdown between rounds)
    }
}

#[test]
fn sigterm_flushes_and_a_restart_serves_the_same_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path(), &["--sync", "everysec"]);
    {
        let mut c = server.conn();
        let mut p = redis::pipe();
        for i in 0..2000 {
            p.cmd("SET")
                .arg(format!("k{i}"))
                .arg(format!("v{i}"))
                .ignore();
        }
        p.cmd("SET")
            .arg("ttl")
            .arg("v")
            .arg("EX")
            .arg(1000)
            .ignore();
        p.query::<()>(&mut c).unwrap();
        // An idle client stays connected through the shutdown.
        let _idle = server.conn();
        server.signal("TERM");
        let status = server.wait(Duration::from_secs(60));
        assert!(status.success(), "exit status {status:?}");
    }
    let log = server.log_text();
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.contains("engine flushed and closed"), "{log}");
    let tables = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count();
    assert!(tables > 0, "shutdown flushed the memtable to a table");

    let server = ServerProcess::start(dir.path(), &[]);
    let mut c = server.conn();
    let n: i64 = redis::cmd("DBSIZE").query(&mut c).unwrap();
    assert_eq!(n, 2001);
    let v: String = redis::cmd("GET").arg("k1999").query(&mut c).unwrap();
    assert_eq!(v, "v1999");
    let ttl: i64 = redis::cmd("TTL").arg("ttl").query(&mut c).unwrap();
    assert!((990..=1000).contains(&ttl), "{ttl}");
}

#[test]
fn config_file_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("strata.toml");
    std::fs::write(
        &file,
        "requirepass = \"from-file\"\nmaxclients = 50\n[engine]\ncompression = [\"none\", \"zstd:3\"]\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = ServerProcess::start(
        &data,
        &["--config", file.to_str().unwrap(), "--maxclients", "60"],
    );
    let url = format!("redis://:from-file@{}/", server.addr);
    let mut c = redis::Client::open(url)
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(10))
        .unwrap();
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxclients")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["maxclients", "60"], "flags override the file");
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("strata-compression")
        .query(&mut c)
        .unwrap();
    assert_eq!(v, vec!["strata-compression", "none,zstd:3"]);
    let info: String = redis::cmd("INFO").arg("server").query(&mut c).unwrap();
    assert!(info.contains("config_file:"), "{info}");

    // Bad settings fail before anything is opened.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--sync", "sometimes", "--dir"])
        .arg(dir.path().join("never"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sometimes"));
    assert!(!dir.path().join("never").exists());
}
