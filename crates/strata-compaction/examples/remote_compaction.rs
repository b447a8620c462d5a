//! Remote compaction (CaaS-LSM) in one process: a control plane on a loopback port, one
//! compaction worker registered with it, and a tiered database that sends every eligible
//! compaction job to the service (`CompactionMode::Remote`). The worker reads the inputs
//! under its roots (the fast directory and the capacity tier's directory), writes the outputs
//! where placement says, and the database verifies and installs them. In production the plane
//! and the workers are `strata compaction-service` and `strata compaction-worker` processes on
//! other machines (see docs/mechanisms/remote-compaction.md).
//!
//! `cargo run --release -p strata-compaction --example remote_compaction [DIR] [NUM_KEYS]`
//! (default 100k keys; an existing DIR is replaced).

use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::compaction::remote::{CompactionMode, CompactionService};
use strata::storage::object::CapacityOptions;
use strata::{Db, Options, WriteBatch};
use strata_compaction::plane::{self, ControlPlane, PlaneConfig};
use strata_compaction::worker::{self, Injection, WorkerSetup};
use strata_compaction::RemoteService;

const TOKEN: &str = "example-token";

fn key(i: u64) -> String {
    format!(
        "key{:012}",
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1_000_000_000_000
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "./strata-data/remote_compaction".into());
    let n: u64 = args
        .next()
        .map_or(100_000, |s| s.parse().expect("NUM_KEYS"));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base)?;
    let base = std::fs::canonicalize(&base)?;
    let (db_dir, cap_dir, scratch) = (base.join("db"), base.join("capacity"), base.join("scratch"));
    std::fs::create_dir_all(&cap_dir)?;
    std::fs::create_dir_all(&scratch)?;

    // The control plane and a worker, on a runtime of their own.
    let rt = tokio::runtime::Runtime::new()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let control = ControlPlane::new(PlaneConfig::default(), TOKEN);
    let plane = rt.spawn(plane::serve(
        format!("127.0.0.1:{port}").parse()?,
        control.clone(),
        None, // TLS: Some(strata_compaction::tls::server(cert, key)?)
        async {
            let _ = stopped.await;
        },
    ));
    let (stop_worker, worker_stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = rt.spawn(worker::run(
        WorkerSetup {
            service: format!("http://127.0.0.1:{port}"),
            token: TOKEN.into(),
            scratch,
            // What the worker may read and write: the database's fast directory and the
            // capacity tier (a directory here; an s3:// URL in production).
            roots: vec![db_dir.display().to_string(), cap_dir.display().to_string()],
            slots: 2,
            name: "example-worker".into(),
            tls: None,
            filters: None,
            inject: Injection::default(),
        },
        async {
            let _ = worker_stopped.await;
        },
    ));

    let service: Arc<dyn CompactionService> =
        RemoteService::connect(&format!("http://127.0.0.1:{port}"), TOKEN, None)?;
    let opts = Options {
        capacity: Some(CapacityOptions::new(format!(
            "file://{}",
            cap_dir.display()
        ))),
        compaction_service: Some(service),
        compaction_mode: CompactionMode::Remote,
        // Small memtables and levels, so that a small load makes many compactions.
        write_buffer_size: 256 << 10,
        target_file_size_base: 256 << 10,
        max_bytes_for_level_base: 1 << 20,
        level0_file_num_compaction_trigger: 2,
        ..Options::default()
    };
    // Wait until the worker has registered, so the first jobs do not fall back to local.
    let deadline = Instant::now() + Duration::from_secs(30);
    while control
        .plane()
        .lock()
        .status(Instant::now())
        .workers
        .is_empty()
    {
        assert!(Instant::now() < deadline, "the worker never registered");
        std::thread::sleep(Duration::from_millis(20));
    }
    let db = Db::open(&db_dir, opts)?;

    let value = [b'v'; 100];
    for start in (0..n).step_by(1000) {
        let mut batch = WriteBatch::new();
        for i in start..n.min(start + 1000) {
            batch.put(key(i).as_bytes(), value);
        }
        db.write(batch)?;
    }
    db.flush()?;
    db.wait_for_compactions()?;
    let r = db
        .stats()
        .remote_compaction
        .expect("a database with a service reports it");
    println!(
        "{n} keys loaded: {} compactions ran on the worker, {} locally; {} verification failures",
        r.remote_jobs, r.local_jobs, r.verify_failures
    );
    assert!(r.remote_jobs > 0, "compactions ran remotely: {r:?}");
    assert_eq!(r.verify_failures, 0);
    for i in 0..n {
        assert_eq!(
            db.get(key(i).as_bytes())?.as_deref(),
            Some(&value[..]),
            "key {i}"
        );
    }
    println!("read all {n} keys back");
    db.close()?;

    let _ = stop_worker.send(());
    let _ = stop.send(());
    rt.block_on(async {
        let _ = worker.await;
        let _ = plane.await;
    });
    Ok(())
}
