//! The capacity tier on SeaweedFS run as a small cluster — a master, three volume servers, a
//! filer and an S3 gateway, each its own process, every file stored twice (replication `001`: a second copy on
//! another server of the rack) — with a volume server killed (SIGKILL) in the middle of a
//! workload. The database is compared with a `BTreeMap` model before the kill, after it
//! (reads of tables whose first copy was on the dead server), and after a reopen: nothing
//! acknowledged is lost, and the engine's retries carry compactions through the failover.
//!
//! Runs when `STRATA_WEED` names a `weed` binary (scripts/test.sh sets it when the tests run on
//! SeaweedFS); skipped, with a message, otherwise. Replay with `STRATA_SEED=<seed>`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{contents, key, seeds, with_seed, Rng};
use strata::storage::object::CapacityOptions;
use strata::{Db, Options, WriteBatch, WriteOptions};

/// A child process killed (SIGKILL) when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(weed: &str, log: &Path, args: &[String]) -> Proc {
    let out = std::fs::File::create(log).unwrap();
    Proc(
        Command::new(weed)
            .args(args)
            // With AWS credentials in its environment (scripts/test.sh exports the test
            // server's), the S3 gateway makes them its only identity and refuses the anonymous
            // bucket PUT: the cluster runs without them, open to any client, as the test server.
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("start {weed}: {e}")),
    )
}

struct Cluster {
    _master: Proc,
    volumes: Vec<Option<Proc>>,
    _filer: Proc,
    _gateway: Proc,
    endpoint: String,
    /// Where the servers keep their data and logs.
    dir: std::path::PathBuf,
}

impl Cluster {
    /// Starts a cluster on free ports; if it does not answer within 90 s (a port taken between
    /// its choice and its use, or a slow start), tries once more on other ports.
    fn start(weed: &str, dir: &Path) -> Cluster {
        match Cluster::try_start(weed, &dir.join("try1")) {
            Ok(c) => c,
            Err(why) => {
                eprintln!("the SeaweedFS cluster did not start; once more:\n{why}");
                Cluster::try_start(weed, &dir.join("try2"))
                    .unwrap_or_else(|why| panic!("the SeaweedFS cluster did not start:\n{why}"))
            }
        }
    }

    fn try_start(weed: &str, dir: &Path) -> Result<Cluster, String> {
        let ip = [
            "-ip=127.0.0.1".to_string(),
            "-ip.bind=127.0.0.1".to_string(),
        ];
        let (m, mg) = (free_port(), free_port());
        let master_addr = format!("127.0.0.1:{m}.{mg}");
        std::fs::create_dir_all(dir.join("m")).unwrap();
        let mut args = vec![
            "master".to_string(),
            format!("-port={m}"),
            format!("-port.grpc={mg}"),
            format!("-mdir={}", dir.join("m").display()),
            "-defaultReplication=001".into(),
            "-volumeSizeLimitMB=32".into(),
            "-peers=none".into(),
        ];
        args.extend(ip.clone());
        let master = spawn(weed, &dir.join("master.log"), &args);
        let volumes = (0..3)
            .map(|i| {
                let d = dir.join(format!("v{i}"));
                std::fs::create_dir_all(&d).unwrap();
                let mut args = vec![
                    "volume".to_string(),
                    format!("-port={}", free_port()),
                    format!("-port.grpc={}", free_port()),
                    format!("-dir={}", d.display()),
                    "-max=30".into(),
                    format!("-master={master_addr}"),
                    "-rack=r1".into(),
                ];
                args.extend(ip.clone());
                Some(spawn(weed, &dir.join(format!("volume{i}.log")), &args))
            })
            .collect();
        let (f, fg) = (free_port(), free_port());
        std::fs::create_dir_all(dir.join("filer")).unwrap();
        let mut args = vec![
            "filer".to_string(),
            format!("-port={f}"),
            format!("-port.grpc={fg}"),
            format!("-master={master_addr}"),
            format!("-defaultStoreDir={}", dir.join("filer").display()),
        ];
        args.extend(ip);
        let filer = spawn(weed, &dir.join("filer.log"), &args);
        let s3 = free_port();
        let args = vec![
            "s3".to_string(),
            "-ip.bind=127.0.0.1".into(),
            format!("-port={s3}"),
            format!("-port.grpc={}", free_port()),
            "-port.iceberg=0".into(),
            "-port.lance=0".into(),
            format!("-filer=127.0.0.1:{f}.{fg}"),
        ];
        let gateway = spawn(weed, &dir.join("s3.log"), &args);
        let endpoint = format!("127.0.0.1:{s3}");
        // The gateway answers once the filer is up; a bucket is an anonymous PUT.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let last = match http_put(&endpoint, "/cluster") {
                // A 409 (BucketAlreadyExists or BucketAlreadyOwnedByYou): an earlier PUT whose
                // answer timed out — the gateway waits for its filer at first — created it.
                Ok(reply)
                    if reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.1 409") =>
                {
                    break
                }
                Ok(reply) => reply.chars().take(600).collect::<String>(),
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                let tails: Vec<String> = ["master", "volume0", "volume1", "volume2", "filer", "s3"]
                    .iter()
                    .map(|n| {
                        let log = std::fs::read_to_string(dir.join(format!("{n}.log")))
                            .unwrap_or_default();
                        let lines: Vec<&str> = log.lines().collect();
                        format!(
                            "--- {n}.log\n{}",
                            lines[lines.len().saturating_sub(8)..].join("\n")
                        )
                    })
                    .collect();
                return Err(format!(
                    "the last answer to PUT /cluster: {last}\n{}",
                    tails.join("\n")
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(Cluster {
            _master: master,
            volumes,
            _filer: filer,
            _gateway: gateway,
            endpoint,
            dir: dir.to_path_buf(),
        })
    }

    fn store(&self) -> Arc<dyn object_store::ObjectStore> {
        Arc::new(
            object_store::aws::AmazonS3Builder::new()
                .with_bucket_name("cluster")
                .with_endpoint(format!("http://{}", self.endpoint))
                .with_allow_http(true)
                .with_access_key_id("test")
                .with_secret_access_key("test")
                .with_region("us-east-1")
                .build()
                .unwrap(),
        )
    }
}

fn http_put(hostport: &str, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(hostport)?;
    c.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        c,
        "PUT {path} HTTP/1.1\r\nHost: {hostport}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut s = String::new();
    c.read_to_string(&mut s)?;
    Ok(s)
}

fn options(cluster: &Cluster) -> Options {
    let mut c = CapacityOptions::new("s3://cluster/db");
    c.part_size = 5 << 20;
    Options {
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        target_file_size_base: 64 << 10,
        num_levels: 4,
        capacity_levels: 3,
        capacity: Some(c),
        capacity_store: Some(cluster.store()),
        ..Options::default()
    }
}

/// Synced batches of puts and deletes, mirrored in `model`, with a flush now and then.
fn workload(rng: &mut Rng, db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, ops: u64) {
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    for i in 0..ops {
        let mut b = WriteBatch::new();
        for _ in 0..8 {
            let k = key(rng.below(20_000));
            if rng.below(10) == 0 {
                b.delete(&k);
                model.remove(&k);
            } else {
                let v = format!("v{i}-{}-", rng.below(1 << 20)).repeat(1 + rng.below(30) as usize);
                b.put(&k, &v);
                model.insert(k, v.into_bytes());
            }
        }
        db.write_opt(b, &sync).unwrap();
        if rng.below(100) == 0 {
            db.flush().unwrap();
        }
    }
}

#[test]
fn a_volume_server_killed_mid_workload_loses_nothing() {
    let Ok(weed) = std::env::var("STRATA_WEED") else {
        eprintln!(
            "a_volume_server_killed_mid_workload_loses_nothing: STRATA_WEED is not set; skipped"
        );
        return;
    };
    for seed in seeds(1) {
        let weed = weed.clone();
        with_seed("seaweedfs_cluster", seed, move || {
            let mut rng = Rng::new(seed);
            let base = tempfile::tempdir().unwrap();
            let mut cluster = Cluster::start(&weed, &base.path().join("weed"));
            let dbdir = base.path().join("db");
            let db = Db::open(&dbdir, options(&cluster)).unwrap();
            let mut model = BTreeMap::new();
            workload(&mut rng, &db, &mut model, 1500);
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
            let on_capacity = db.stats().tier.capacity_table_bytes;
            assert!(on_capacity > 0, "nothing reached the capacity tier");
            assert_eq!(contents(&db), model, "before the kill");

            // One volume server dies (SIGKILL), mid-workload: one that holds data (with two
            // copies of every file on three servers, at least two do).
            let dir = cluster.dir.clone();
            let holds = |i: usize| {
                std::fs::read_dir(dir.join(format!("v{i}")))
                    .unwrap()
                    .filter_map(|e| e.ok())
                    .any(|e| {
                        e.file_name().to_string_lossy().ends_with(".dat")
                            && e.metadata().is_ok_and(|m| m.len() > 8)
                    })
            };
            let first = rng.below(3) as usize;
            let victim = (first..first + 3)
                .map(|i| i % 3)
                .find(|&i| holds(i))
                .expect("no volume server holds data");
            drop(cluster.volumes[victim].take());
            workload(&mut rng, &db, &mut model, 1500);
            db.flush().unwrap();
            db.wait_for_compactions().unwrap();
            assert_eq!(
                contents(&db),
                model,
                "after volume server {victim} was killed"
            );
            let s = db.stats();
            db.close().unwrap();

            let db = Db::open(&dbdir, options(&cluster)).unwrap();
            assert_eq!(contents(&db), model, "reopened");
            db.close().unwrap();
            eprintln!(
                "seaweedfs cluster: volume server {victim} killed; {} bytes on the capacity tier, {} requests, {} retried, {} failed for good",
                s.tier.capacity_table_bytes,
                s.tier.capacity_requests.total(),
                s.tier.capacity_retries,
                s.tier.capacity_errors
            );
        });
    }
}
