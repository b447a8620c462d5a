//! Remote compaction end to end with real processes on loopback: a `strata
//! compaction-service` control plane, `strata compaction-worker` processes, and a database
//! in this process using `strata_compaction::RemoteService`. Write-heavy workloads are
//! checked against a `BTreeMap` oracle (after a reopen without the service too) while workers
//! are SIGKILLed mid-job, the control plane is stopped and restarted, workers inject failures
//! of each class, tokens are wrong and jobs name paths outside a worker's roots. Every install
//! is a verified result (no verification failures), nothing is lost, no orphan table is left.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::compaction::remote::{CompactionMode, CompactionService};
use strata::storage::object::CapacityOptions;
use strata::{Db, Options, ReadOptions};
use strata_test_support::Rng;

const TOKEN: &str = "test-token-0123";

struct Proc {
    child: Child,
}

impl Proc {
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn strata() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata"))
}

fn log_file(dir: &Path, name: &str) -> Stdio {
    Stdio::from(std::fs::File::create(dir.join(format!("{name}.log"))).unwrap())
}

fn service(dir: &Path, port: u16, name: &str) -> Proc {
    let child = strata()
        .args([
            "compaction-service",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--token", TOKEN, "--worker-timeout-ms", "1500"])
        .stdout(Stdio::null())
        .stderr(log_file(dir, name))
        .spawn()
        .unwrap();
    Proc { child }
}

fn worker(dir: &Path, port: u16, name: &str, root: &Path, extra: &[&str]) -> Proc {
    let scratch = dir.join(format!("scratch-{name}"));
    let child = strata()
        .args([
            "compaction-worker",
            "--service",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--token", TOKEN, "--name", name, "--root"])
        .arg(root)
        .arg("--scratch")
        .arg(&scratch)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(log_file(dir, name))
        .spawn()
        .unwrap();
    Proc { child }
}

fn status(port: u16) -> Option<serde_json::Value> {
    let out = strata()
        .args([
            "compaction-service",
            "status",
            "--service",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--token", TOKEN])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// Waits until `n` workers are registered.
fn await_workers(port: u16, n: usize) -> serde_json::Value {
    let t = Instant::now();
    loop {
        if let Some(s) = status(port) {
            if s["workers"].as_array().map_or(0, |w| w.len()) >= n {
                return s;
            }
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{n} workers never registered"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn options(cap: &Path, svc: Option<Arc<dyn CompactionService>>) -> Options {
    let mut c = CapacityOptions::new(format!("file://{}", cap.display()));
    c.part_size = 5 << 20;
    Options {
        write_buffer_size: 32 * 1024,
        level0_file_num_compaction_trigger: 2,
        max_bytes_for_level_base: 64 * 1024,
        max_bytes_for_level_multiplier: 4.0,
        target_file_size_base: 16 * 1024,
        block_size: 1024,
        num_levels: 5,
        capacity: Some(c),
        capacity_levels: 2,
        compaction_mode: CompactionMode::Remote,
        compaction_service: svc,
        ..Options::default()
    }
}

fn remote(port: u16, token: &str) -> Arc<dyn CompactionService> {
    strata_compaction::RemoteService::connect(&format!("http://127.0.0.1:{port}"), token, None)
        .unwrap()
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut m = BTreeMap::new();
    while it.valid() {
        m.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    m
}

fn write(db: &Db, rng: &mut Rng, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: u32) {
    for i in 0..n {
        let k = format!("key{:06}", rng.below(20_000)).into_bytes();
        if rng.chance(5) {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("{i}-{}", "v".repeat(50 + rng.below(150) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
}

/// Checks the database against the model, the absence of orphans and unverified installs,
/// then reopens it without any service and checks again.
fn finish(
    db: Db,
    db_dir: &Path,
    cap: &Path,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
) -> serde_json::Value {
    db.wait_for_compactions().unwrap();
    assert!(contents(&db) == *model, "contents differ from the model");
    let live: std::collections::HashSet<u64> =
        db.live_tables().into_iter().map(|(_, f)| f.id).collect();
    let orphans: Vec<String> = std::fs::read_dir(db_dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.unwrap().file_name().to_string_lossy().into_owned();
            let id: u64 = n.strip_suffix(".sst")?.parse().ok()?;
            (!live.contains(&id)).then_some(n)
        })
        .collect();
    assert!(orphans.is_empty(), "orphaned fast-tier tables: {orphans:?}");
    let r = serde_json::to_value(db.stats().remote_compaction.expect("remote stats")).unwrap();
    assert_eq!(r["verify_failures"], 0, "{r}");
    db.close().unwrap();
    let db = Db::open(db_dir, options(cap, None)).unwrap();
    assert!(
        contents(&db) == *model,
        "contents differ from the model after reopening"
    );
    r
}

fn dirs(root: &Path) -> (PathBuf, PathBuf) {
    let (db, cap) = (root.join("db"), root.join("cap"));
    std::fs::create_dir_all(&cap).unwrap();
    (db, cap)
}

#[test]
fn workers_killed_and_control_plane_restarted_lose_nothing() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let port = free_port();
    let mut cp = service(root, port, "service");
    // Slow jobs, so a kill lands mid-job.
    let delay = ["--inject-delay-ms", "150"];
    let mut w1 = worker(root, port, "w1", root, &delay);
    let _w2 = worker(root, port, "w2", root, &delay);
    let _w3 = worker(root, port, "w3", root, &delay);
    await_workers(port, 3);
    let (db_dir, cap) = dirs(root);
    let db = Db::open(&db_dir, options(&cap, Some(remote(port, TOKEN)))).unwrap();
    let mut rng = Rng::new(0xC0FFEE);
    let mut model = BTreeMap::new();
    write(&db, &mut rng, &mut model, 20_000);
    // Kill a worker while it runs a job.
    let t0 = Instant::now();
    loop {
        let s = status(port).unwrap();
        let busy = s["workers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["name"] == "w1" && !w["running"].as_array().unwrap().is_empty());
        if busy {
            break;
        }
        write(&db, &mut rng, &mut model, 500);
        assert!(t0.elapsed() < Duration::from_secs(60), "w1 never got a job");
    }
    w1.kill();
    write(&db, &mut rng, &mut model, 20_000);
    db.wait_for_compactions().unwrap();
    let s = status(port).unwrap();
    assert_eq!(s["counters"]["workers_lost"], 1, "{s}");
    // The control plane goes away: compactions run locally meanwhile...
    cp.kill();
    write(&db, &mut rng, &mut model, 20_000);
    db.wait_for_compactions().unwrap();
    let during = db.stats().remote_compaction.unwrap();
    assert!(
        during.service_unreachable > 0 && during.local_jobs > 0,
        "{during:?}"
    );
    // ... and go remote again once it is back (the workers register again by themselves).
    let _cp = service(root, port, "service-2");
    await_workers(port, 2);
    let remote_before = during.remote_jobs;
    // The client waits 1 s after a failed connection before it tries the service again: an
    // optimized build writes and compacts faster than that, so keep going until a job has
    // gone remote (or a minute has passed).
    let t0 = Instant::now();
    loop {
        write(&db, &mut rng, &mut model, 5_000);
        db.compact_range(None, None).unwrap();
        let now = db.stats().remote_compaction.unwrap().remote_jobs;
        if now > remote_before || t0.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    let r = finish(db, &db_dir, &cap, &model);
    assert!(r["remote_jobs"].as_u64().unwrap() > remote_before, "{r}");
    assert!(r["workers_lost"].as_u64().unwrap() >= 1, "{r}");
    // No worker left staging files behind.
    for w in ["w2", "w3"] {
        let staged = std::fs::read_dir(root.join(format!("scratch-{w}")))
            .unwrap()
            .count();
        assert_eq!(staged, 0, "{w} left staging files");
    }
}

#[test]
fn injected_failures_of_each_class() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let port = free_port();
    let _cp = service(root, port, "service");
    // Retriable: retried on the same worker. Solvable: moved to the other worker. Fatal: back
    // to the instance, which compacts locally.
    let _a = worker(root, port, "a", root, &["--inject-failure", "retriable:1"]);
    await_workers(port, 1);
    let (db_dir, cap) = dirs(root);
    let db = Db::open(&db_dir, options(&cap, Some(remote(port, TOKEN)))).unwrap();
    let mut rng = Rng::new(7);
    let mut model = BTreeMap::new();
    write(&db, &mut rng, &mut model, 5_000);
    db.wait_for_compactions().unwrap();
    let r = db.stats().remote_compaction.unwrap();
    assert!(r.failures_retriable >= 1 && r.remote_jobs > 0, "{r:?}");

    let _b = worker(root, port, "b", root, &["--inject-failure", "solvable:1"]);
    let _c = worker(root, port, "c", root, &["--inject-failure", "solvable:1"]);
    await_workers(port, 3);
    write(&db, &mut rng, &mut model, 10_000);
    db.wait_for_compactions().unwrap();
    let r = db.stats().remote_compaction.unwrap();
    assert!(r.failures_solvable >= 1, "{r:?}");

    let _d = worker(root, port, "d", root, &["--inject-failure", "fatal:1000"]);
    let _e = worker(root, port, "e", root, &["--inject-failure", "fatal:1000"]);
    await_workers(port, 5);
    // Only fatal workers are left.
    drop((_a, _b, _c));
    std::thread::sleep(Duration::from_secs(3));
    write(&db, &mut rng, &mut model, 10_000);
    db.compact_range(None, None).unwrap();
    let r = finish(db, &db_dir, &cap, &model);
    assert!(r["failures_fatal"].as_u64().unwrap() >= 1, "{r}");
}

#[test]
fn bad_tokens_and_paths_outside_the_roots_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let port = free_port();
    let _cp = service(root, port, "service");
    // A worker with the wrong token exits non-zero.
    let out = strata()
        .args([
            "compaction-worker",
            "--service",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--token", "wrong-token-999", "--root"])
        .arg(root)
        .arg("--scratch")
        .arg(root.join("scratch-bad"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("refused"));
    // A worker whose roots do not hold the database.
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let _w = worker(root, port, "w", &elsewhere, &[]);
    await_workers(port, 1);
    let (db_dir, cap) = dirs(&root.join("dbroot"));
    // A database with the wrong token compacts locally.
    let db = Db::open(&db_dir, options(&cap, Some(remote(port, "not-the-token")))).unwrap();
    let mut rng = Rng::new(3);
    let mut model = BTreeMap::new();
    write(&db, &mut rng, &mut model, 5_000);
    db.wait_for_compactions().unwrap();
    let r = db.stats().remote_compaction.unwrap();
    assert!(r.service_unreachable > 0 && r.remote_jobs == 0, "{r:?}");
    drop(finish(db, &db_dir, &cap, &model));
    let s = status(port).unwrap();
    assert!(s["counters"]["rejected_auth"].as_u64().unwrap() >= 1, "{s}");
    // With the right token, every job names a path outside the worker's roots: refused as
    // fatal, compacted locally.
    let db = Db::open(&db_dir, options(&cap, Some(remote(port, TOKEN)))).unwrap();
    write(&db, &mut rng, &mut model, 5_000);
    db.compact_range(None, None).unwrap();
    let r = finish(db, &db_dir, &cap, &model);
    assert!(r["failures_fatal"].as_u64().unwrap() >= 1, "{r}");
    assert_eq!(r["remote_jobs"], 0, "{r}");
}

#[test]
fn strata_serve_compacts_on_the_service() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    let port = free_port();
    let _cp = service(root, port, "service");
    let _w = worker(root, port, "w", root, &[]);
    await_workers(port, 1);
    let data = root.join("data");
    let url = format!("http://127.0.0.1:{port}");
    let server = common::ServerProcess::start(
        &data,
        &[
            "--compaction-service",
            &url,
            "--compaction-token",
            TOKEN,
            "--compaction-mode",
            "remote",
            "--write-buffer-size",
            "64kb",
            "--set",
            "engine.target-file-size-base=\"64kb\"",
            "--set",
            "engine.max-bytes-for-level-base=\"256kb\"",
            "--set",
            "engine.level0-file-num-compaction-trigger=2",
        ],
    );
    let mut c = server.conn();
    let value = "x".repeat(300);
    for i in 0..6000 {
        let _: () = redis::cmd("SET")
            .arg(format!("key:{}", (i * 7919) % 6000))
            .arg(format!("{i}-{value}"))
            .query(&mut c)
            .unwrap();
        if i % 1000 == 0 {
            // Keys with a past expiry are removed by compactions, remote ones included.
            let _: () = redis::cmd("SET")
                .arg(format!("gone:{i}"))
                .arg("v")
                .arg("PX")
                .arg(1)
                .query(&mut c)
                .unwrap();
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let info = loop {
        let info: String = redis::cmd("INFO").arg("all").query(&mut c).unwrap();
        let jobs = info
            .lines()
            .find_map(|l| l.strip_prefix("remote_compaction_jobs:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if jobs > 0 {
            break info;
        }
        assert!(Instant::now() < deadline, "no remote compaction: {info}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(info.contains("remote_compaction_enabled:1"), "{info}");
    assert!(
        info.contains("remote_compaction_verify_failures:0"),
        "{info}"
    );
    for i in (0..6000).step_by(97) {
        let v: Option<String> = redis::cmd("GET")
            .arg(format!("key:{i}"))
            .query(&mut c)
            .unwrap();
        assert!(v.is_some_and(|v| v.ends_with(&value)), "key:{i}");
    }
    let token: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("strata-compaction-token")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        token,
        vec!["strata-compaction-token".to_string(), "(set)".to_string()]
    );
}
