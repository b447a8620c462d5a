//! Space amplification at the end of a run (`--space-amp`): the bytes of the engine's tables
//! over the logical bytes of the records a full scan finds, the same way for every engine.
//!
//! The engine settles first (memtable flushed, compactions finished): otherwise records still
//! in a memtable count as live but not as table bytes, a write-ahead log replayed at open
//! hides deletes from the tables, and a compaction in flight counts its inputs and outputs —
//! each engine's figure would depend on where its background work happened to be.
//!
//! The logical size is the live records times the record size (key size plus the mean value
//! size, uncompressed), so a compressible value set gives an amplification below 1 and the
//! engines stay comparable. Table bytes are the engine's own gauge (Strata: tables on both
//! tiers; RocksDB: `rocksdb.live-sst-files-size`); write-ahead logs are not counted. The scan
//! is not a measured phase. Depends on the `engine` trait only.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::engine::KvEngine;

/// Entries a counting scan reads per engine call.
const CHUNK: usize = 10_000;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SpaceReport {
    pub live_keys: u64,
    pub logical_bytes: u64,
    pub table_bytes: u64,
    pub space_amp: Option<f64>,
    /// Seconds the engine took to settle before the measurement, and the counting scan's.
    #[serde(default)]
    pub settle_secs: f64,
    pub scan_secs: f64,
}

/// Counts the live records with a full scan and relates the table bytes to them.
/// `None` when the engine has no table-bytes gauge.
pub fn measure(engine: &dyn KvEngine, record_bytes: f64) -> anyhow::Result<Option<SpaceReport>> {
    let settle = Instant::now();
    engine.settle()?;
    let settle_secs = settle.elapsed().as_secs_f64();
    let c = engine.counters();
    let Some(table_bytes) = (match (c.fast_table_bytes, c.capacity_table_bytes) {
        (None, None) => None,
        (f, c) => Some(f.unwrap_or(0) + c.unwrap_or(0)),
    }) else {
        return Ok(None);
    };
    let t = Instant::now();
    let live_keys = count_live(engine)?;
    let mut r = report(
        live_keys,
        record_bytes,
        table_bytes,
        t.elapsed().as_secs_f64(),
    );
    r.settle_secs = settle_secs;
    Ok(Some(r))
}

fn count_live(engine: &dyn KvEngine) -> anyhow::Result<u64> {
    let (mut pos, mut last, mut n) = (Vec::new(), Vec::new(), 0u64);
    loop {
        let got = engine.scan(&pos, CHUNK, &mut last)?;
        n += got as u64;
        if got < CHUNK {
            return Ok(n);
        }
        // Resume just after the last key read: the smallest key greater than it.
        pos.clear();
        pos.extend_from_slice(&last);
        pos.push(0);
    }
}

/// The report for `live_keys` records of `record_bytes` each in `table_bytes` of tables.
pub fn report(live_keys: u64, record_bytes: f64, table_bytes: u64, scan_secs: f64) -> SpaceReport {
    let logical = (live_keys as f64 * record_bytes).round() as u64;
    SpaceReport {
        live_keys,
        logical_bytes: logical,
        table_bytes,
        space_amp: (logical > 0).then(|| table_bytes as f64 / logical as f64),
        settle_secs: 0.0,
        scan_secs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amplification_is_tables_over_live_records() {
        let r = report(1000, 116.0, 232_000, 0.5);
        assert_eq!(r.logical_bytes, 116_000);
        assert_eq!(r.space_amp, Some(2.0));
        assert_eq!(report(0, 116.0, 4096, 0.0).space_amp, None);
    }
}
