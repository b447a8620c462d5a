//! The split-forest compaction style (SifrDB): each level holds several sorted runs ("trees")
//! of fixed-size tables, and a compaction merges a level's trees into one new tree of the next
//! level, rewriting only the tables that overlap. This loads random keys into a database
//! created with `CompactionStyle::SplitForest` and small tables (so the forest grows a few
//! levels on little data), prints the runs of each level and the forest's counters, and reads
//! every key back.
//!
//! `cargo run --release -p strata --example split_forest [DIR] [NUM_KEYS]` (default 300k keys;
//! an existing DIR is replaced).

use std::time::Instant;

use strata::compaction::ForestOptions;
use strata::{CompactionStyle, Db, Options, WriteBatch};

fn key(i: u64) -> String {
    format!(
        "key{:012}",
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 1_000_000_000_000
    )
}

fn main() -> strata::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .unwrap_or_else(|| "./strata-data/split_forest".into());
    let n: u64 = args
        .next()
        .map_or(300_000, |s| s.parse().expect("NUM_KEYS"));
    let _ = std::fs::remove_dir_all(&dir);

    let opts = Options {
        compaction_style: CompactionStyle::SplitForest,
        forest: ForestOptions {
            trees_per_level: 4,     // trees a level collects before they merge down
            cleaning_threshold: 10, // early cleaning: free merged inputs every 10 output tables
            ..ForestOptions::default()
        },
        write_buffer_size: 1 << 20,
        target_file_size_base: 1 << 20,
        max_bytes_for_level_base: 4 << 20,
        ..Options::default()
    };
    let db = Db::open(&dir, opts)?;

    let start = Instant::now();
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
    println!(
        "loaded {n} keys of 100-byte values in {:.1}s into a split forest",
        start.elapsed().as_secs_f64()
    );

    let runs = db.sorted_runs();
    let deepest = runs.iter().map(|r| r.level).max().unwrap_or(0);
    for level in 0..=deepest {
        let trees: Vec<String> = runs
            .iter()
            .filter(|r| r.level == level)
            .map(|r| format!("{} tables", r.tables.len()))
            .collect();
        if !trees.is_empty() {
            println!("L{level}: {} runs ({})", trees.len(), trees.join(", "));
        }
    }
    let stats = db.stats();
    let f = &stats.forest;
    println!(
        "forest: {} merges, {} tables moved by metadata alone, {} bytes freed early by cleaning",
        f.merges, f.moved_tables, f.early_cleaned_bytes
    );
    assert!(f.merges > 0, "the load merged trees into deeper levels");

    for i in 0..n {
        assert_eq!(
            db.get(key(i).as_bytes())?.as_deref(),
            Some(&value[..]),
            "key {i}"
        );
    }
    let s = db.stats();
    println!(
        "read all {n} keys back; {:.2} tables probed per lookup",
        s.table_probes as f64 / s.gets.max(1) as f64
    );
    db.close()
}
