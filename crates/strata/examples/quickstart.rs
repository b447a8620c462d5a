//! Quickstart: opens a database under `./strata-data/quickstart` (or the directory given as
//! the first argument) with default options, loads keys, reads them back, scans, deletes a
//! range, reopens, and prints the engine's statistics.
//!
//! `cargo run --release --example quickstart [DIR] [NUM_KEYS]`

use std::time::Instant;

use strata::{Db, Options, ReadOptions, WriteBatch};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "strata-data/quickstart".into());
    let n: u64 = args
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let key = |i: u64| {
        format!(
            "user{:012}",
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % (n * 10)
        )
    };

    let db = Db::open(&dir, Options::default())?;
    println!("opened {dir} (latest sequence {})", db.latest_sequence());

    let t = Instant::now();
    let mut batch = WriteBatch::new();
    for i in 0..n {
        batch.put(key(i), format!("value-{i:0>100}"));
        if batch.len() == 100 {
            db.write(std::mem::take(&mut batch))?;
        }
    }
    db.write(batch)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "loaded {n} keys of 100-byte values in {secs:.2}s ({:.0} keys/s)",
        n as f64 / secs
    );

    let t = Instant::now();
    let mut found = 0;
    for i in (0..n).step_by(7) {
        if db.get(key(i))?.is_some() {
            found += 1;
        }
    }
    let reads = n.div_ceil(7);
    let secs = t.elapsed().as_secs_f64();
    println!(
        "read {reads} keys, {found} found, in {secs:.2}s ({:.0} reads/s)",
        reads as f64 / secs
    );
    assert_eq!(found, reads, "every written key must be found");

    let t = Instant::now();
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    let mut scanned = 0u64;
    while it.valid() {
        scanned += 1;
        it.next();
    }
    it.status()?;
    println!(
        "scanned {scanned} keys in {:.2}s",
        t.elapsed().as_secs_f64()
    );

    // Keys are `user` + 12 digits below 10 * NUM_KEYS: this drops about the first tenth.
    let cut = format!("user{:012}", n);
    db.delete_range("user", &cut)?;
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    assert!(
        !it.valid() || it.key() >= cut.as_bytes(),
        "range delete must hide its keys"
    );
    drop(it);
    db.flush()?;
    db.wait_for_compactions()?;
    println!("\n{}", db.stats());
    db.close()?;

    let db = Db::open(&dir, Options::default())?;
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first();
    let first = it
        .valid()
        .then(|| String::from_utf8_lossy(it.key()).into_owned());
    println!("\nreopened: first key is now {first:?}");
    db.close()?;
    Ok(())
}
