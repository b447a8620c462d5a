//! `strata-families`: two key spaces as two column families of one database, or as two
//! databases — the comparison issue 49 asks for ("same throughput, fewer fsyncs"). Key space 0
//! lives all on the fast tier; key space 1 puts its last level on a `file://` capacity tier
//! (emulated at `--capacity-latency-ms` per request) with HotRAP. Threads alternate between the
//! key spaces (thread `t` writes and reads key space `t % 2`), so in `families` mode writers of
//! both share one WAL and its group commits, and in `databases` mode each database has its own.
//!
//! Phases, each `--seconds` long on one data set: `syncwrite` (every write fsynced: the WAL's
//! fsyncs are what families share), `write` (no fsync), `readrandom` (keys written by the
//! earlier phases). One JSON line per phase: operations per second, and the WAL fsyncs and
//! write groups of the phase summed over the databases.
//!
//! ```sh
//! cargo build --release -p strata-bench --bin strata-families
//! target/release/strata-families --mode families --dir /tmp/fam
//! target/release/strata-families --mode databases --dir /tmp/dbs
//! ```

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use strata::storage::object::{CapacityOptions, Emulation};
use strata::{CfOptions, ColumnFamily, Db, Options, WriteBatch, WriteOptions};

#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
enum Mode {
    /// One database, two column families.
    Families,
    /// Two databases.
    Databases,
}

#[derive(Parser, Debug)]
struct Args {
    #[arg(long, value_enum)]
    mode: Mode,
    /// Work directory (emptied first)
    #[arg(long)]
    dir: PathBuf,
    #[arg(long, default_value_t = 4)]
    threads: usize,
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Keys per key space (writes and reads draw from them)
    #[arg(long, default_value_t = 500_000)]
    keys: u64,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    #[arg(long, default_value_t = 2)]
    capacity_latency_ms: u64,
}

/// Where a key space lives.
enum Space {
    Family(Db, ColumnFamily),
    Database(Db),
}

impl Space {
    fn db(&self) -> &Db {
        match self {
            Space::Family(db, _) | Space::Database(db) => db,
        }
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> strata::Result<()> {
        let mut b = WriteBatch::new();
        match self {
            Space::Family(_, cf) => b.put_cf(cf, key, value),
            Space::Database(_) => b.put(key, value),
        }
        let o = WriteOptions {
            sync,
            ..Default::default()
        };
        self.db().write_opt(b, &o)
    }

    fn get(&self, key: &[u8]) -> strata::Result<bool> {
        Ok(match self {
            Space::Family(db, cf) => db.get_cf(cf, key)?.is_some(),
            Space::Database(db) => db.get(key)?.is_some(),
        })
    }
}

fn base_options(a: &Args) -> Options {
    let mut c = CapacityOptions::new(format!("file://{}", a.dir.join("cap").display()));
    c.emulation = Some(Emulation {
        latency: Duration::from_millis(a.capacity_latency_ms),
        ..Default::default()
    });
    Options {
        write_buffer_size: 8 << 20,
        block_cache_capacity: 8 << 20,
        capacity: Some(c),
        ..Options::default()
    }
}

/// Key space 0: every level on the fast tier, no HotRAP. Key space 1: the default placement
/// (the last level on the capacity tier) with HotRAP.
fn space_options(o: &Options, space: usize) -> CfOptions {
    let base = CfOptions::from_options(o);
    if space == 0 {
        CfOptions {
            fast_levels: Some(o.num_levels - 1),
            hotrap: false,
            ..base
        }
    } else {
        CfOptions {
            hotrap: true,
            ..base
        }
    }
}

fn open(a: &Args) -> anyhow::Result<Vec<Arc<Space>>> {
    let o = base_options(a);
    Ok(match a.mode {
        Mode::Families => {
            let db = Db::open(a.dir.join("db"), o.clone())?;
            (0..2)
                .map(|s| -> anyhow::Result<Arc<Space>> {
                    let cf = db.create_cf(&format!("space{s}"), space_options(&o, s))?;
                    Ok(Arc::new(Space::Family(db.clone(), cf)))
                })
                .collect::<anyhow::Result<_>>()?
        }
        Mode::Databases => (0..2)
            .map(|s| -> anyhow::Result<Arc<Space>> {
                let c = space_options(&o, s);
                let so = Options {
                    fast_levels: c.fast_levels,
                    hotrap: strata::tier::hot::HotRapOptions {
                        enabled: c.hotrap,
                        ..o.hotrap.clone()
                    },
                    capacity: o.capacity.as_ref().map(|cap| {
                        let mut cap = cap.clone();
                        cap.url = format!("file://{}", a.dir.join(format!("cap{s}")).display());
                        cap
                    }),
                    ..o.clone()
                };
                Ok(Arc::new(Space::Database(Db::open(
                    a.dir.join(format!("db{s}")),
                    so,
                )?)))
            })
            .collect::<anyhow::Result<_>>()?,
    })
}

/// The databases' WAL fsyncs and write groups so far.
fn wal_counts(spaces: &[Arc<Space>], mode: Mode) -> (u64, u64) {
    let dbs: Vec<&Db> = match mode {
        Mode::Families => vec![spaces[0].db()],
        Mode::Databases => spaces.iter().map(|s| s.db()).collect(),
    };
    dbs.iter().fold((0, 0), |(s, g), db| {
        let st = db.stats();
        (s + st.wal_syncs, g + st.write_groups)
    })
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:013}").into_bytes()
}

fn run_phase(a: &Args, spaces: &[Arc<Space>], phase: &str) -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let ops = Arc::new(AtomicU64::new(0));
    let (syncs0, groups0) = wal_counts(spaces, a.mode);
    let start = Instant::now();
    let handles: Vec<_> = (0..a.threads)
        .map(|t| {
            let space = spaces[t % 2].clone();
            let (stop, ops) = (stop.clone(), ops.clone());
            let (keys, value, phase) = (a.keys, vec![b'v'; a.value_size], phase.to_string());
            std::thread::spawn(move || -> strata::Result<()> {
                let mut x =
                    0x9e37_79b9_7f4a_7c15u64 ^ (t as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
                while !stop.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = key(x % keys);
                    match phase.as_str() {
                        "syncwrite" => space.put(&k, &value, true)?,
                        "write" => space.put(&k, &value, false)?,
                        _ => {
                            space.get(&k)?;
                        }
                    }
                    ops.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(a.seconds));
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.join().expect("worker thread")?;
    }
    let secs = start.elapsed().as_secs_f64();
    let (syncs1, groups1) = wal_counts(spaces, a.mode);
    let n = ops.load(Ordering::Relaxed);
    println!(
        "{}",
        serde_json::json!({
            "mode": format!("{:?}", a.mode).to_lowercase(),
            "phase": phase,
            "threads": a.threads,
            "ops": n,
            "ops_per_sec": n as f64 / secs,
            "wal_syncs": syncs1 - syncs0,
            "write_groups": groups1 - groups0,
            "syncs_per_1k_ops": (syncs1 - syncs0) as f64 * 1000.0 / n.max(1) as f64,
        })
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let _ = std::fs::remove_dir_all(&a.dir);
    std::fs::create_dir_all(&a.dir)?;
    let spaces = open(&a)?;
    for phase in ["syncwrite", "write", "readrandom"] {
        run_phase(&a, &spaces, phase)?;
    }
    let dbs: Vec<Db> = match a.mode {
        Mode::Families => vec![spaces[0].db().clone()],
        Mode::Databases => spaces.iter().map(|s| s.db().clone()).collect(),
    };
    drop(spaces);
    for db in dbs {
        db.close()?;
    }
    let _ = std::fs::remove_dir_all(&a.dir);
    Ok(())
}
