//! Losing the fast tier loses nothing: a tiered database whose log (the WAL and the manifest's
//! mirror) lives apart from the fast directory — here another directory; in production a
//! network volume or an object store — with the extended WAL on. After a load, the fast
//! directory is deleted as a lost disk would be, `recovery::recover` rebuilds it in parallel
//! from the log location and the capacity tier, and every acknowledged write is read back.
//!
//! `cargo run --release -p strata --example node_loss [DIR] [NUM_KEYS]` (default 200k keys;
//! an existing DIR is replaced).

use std::path::Path;
use std::time::Instant;

use strata::recovery::{recover, RecoveryMode};
use strata::storage::object::CapacityOptions;
use strata::{Db, Options, WriteBatch, WriteOptions};

fn key(i: u64) -> String {
    format!(
        "user{:012}",
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1_000_000_000_000
    )
}

/// A 100-byte value that does not compress to nothing: the key's number, then hashes of it.
fn value(i: u64) -> Vec<u8> {
    let mut v = format!("{i:012}:");
    let mut h = i;
    while v.len() < 100 {
        h = h
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .wrapping_add(0xbf58_476d_1ce4_e5b9);
        v.push_str(&format!("{:016x}", h ^ (h >> 29)));
    }
    v.truncate(100);
    v.into_bytes()
}

fn options(base: &Path) -> Options {
    Options {
        capacity: Some(CapacityOptions::new(format!(
            "file://{}",
            base.join("capacity").display()
        ))),
        wal_location: Some(base.join("log")), // or "s3://bucket/prefix/log"
        extended_wal: true,                   // log each fast-tier table's key list
        // Small tables and levels, so that a small load spans both tiers.
        write_buffer_size: 1 << 20,
        max_bytes_for_level_base: 2 << 20,
        target_file_size_base: 1 << 20,
        ..Options::default()
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let base = args
        .next()
        .unwrap_or_else(|| "./strata-data/node_loss".into());
    let n: u64 = args
        .next()
        .map_or(200_000, |s| s.parse().expect("NUM_KEYS"));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base)?;
    let base = &std::fs::canonicalize(&base)?; // file:// URLs need an absolute path
    let dir = base.join("db");

    let db = Db::open(&dir, options(base))?;
    for start in (0..n).step_by(1000) {
        let mut batch = WriteBatch::new();
        for i in start..n.min(start + 1000) {
            batch.put(key(i).as_bytes(), value(i));
        }
        db.write(batch)?;
    }
    db.flush()?;
    db.wait_for_compactions()?;
    // The last writes stay in the memtable and the WAL only: acknowledged with sync.
    for i in n..n + 1000 {
        let sync = WriteOptions {
            sync: true,
            ..Default::default()
        };
        let mut batch = WriteBatch::new();
        batch.put(key(i).as_bytes(), value(i));
        db.write_opt(batch, &sync)?;
    }
    let s = db.stats();
    println!(
        "wrote {} keys: fast-tier tables {} bytes, capacity-tier tables {} bytes, log at {}",
        n + 1000,
        s.tier.fast_table_bytes,
        s.tier.capacity_table_bytes,
        base.join("log").display()
    );
    // The node dies: no clean close, and its disk is gone.
    drop(db);
    std::fs::remove_dir_all(&dir)?;
    println!("deleted the fast directory {}", dir.display());

    let start = Instant::now();
    let report = recover(&dir, options(base), RecoveryMode::Parallel)?;
    println!(
        "recovered in {:.2}s: {} lost fast-tier tables rebuilt as {} tables ({} entries) from {} WAL files on {} threads",
        start.elapsed().as_secs_f64(),
        report.lost_tables,
        report.tables_written,
        report.entries,
        report.wal_files,
        report.threads
    );

    let db = Db::open(&dir, options(base))?;
    for i in 0..n + 1000 {
        let got = db.get(key(i).as_bytes())?;
        assert_eq!(
            got.as_deref(),
            Some(&value(i)[..]),
            "key {i} after recovery"
        );
    }
    println!("all {} acknowledged writes are back", n + 1000);
    db.close()?;
    Ok(())
}
