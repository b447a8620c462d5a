//! A minimal fillrandom loop (16-byte keys, 100-byte values, N threads, one put per write) for
//! profiling the write path: `cargo run --release --example fill -- DIR [KEYS] [THREADS]`.

use std::time::Instant;

use strata::{Db, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut a = std::env::args().skip(1);
    let dir = a.next().unwrap_or_else(|| "strata-data/fill".into());
    let n: u64 = a
        .next()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let threads: u64 = a.next().map(|s| s.parse()).transpose()?.unwrap_or(2);
    let concurrent = a.next().is_some_and(|s| s == "concurrent");
    let db = Db::open(
        &dir,
        Options {
            concurrent_memtable_writes: concurrent,
            ..Options::default()
        },
    )?;
    let t = Instant::now();
    std::thread::scope(|s| {
        for th in 0..threads {
            let db = db.clone();
            s.spawn(move || {
                let value = [b'v'; 100];
                for i in 0..n / threads {
                    let k = (i * threads + th).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                    db.put(format!("{k:016x}"), value).unwrap();
                }
            });
        }
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "fillrandom: {n} puts in {secs:.2}s = {:.0} ops/s ({:.2} micros/op)",
        n as f64 / secs,
        secs * 1e6 / n as f64
    );
    db.wait_for_compactions()?;
    println!("{}", db.stats());
    Ok(())
}
