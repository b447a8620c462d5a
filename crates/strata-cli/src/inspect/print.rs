//! Text output of `strata inspect`: keys printed as text when printable, hex otherwise.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result};
use strata::batch::BatchOp;
use strata::inspect::{
    self, KeyVersion, KeyVersionSource, ManifestDump, TableOpener, VerifyReport, WalDump,
};
use strata::sst::Table;
use strata::types::ValueKind;

/// A key or value for display: as-is when printable ASCII, else `0x` + hex; long values are
/// cut at 64 bytes with the total length shown.
pub fn show(b: &[u8]) -> String {
    const MAX: usize = 64;
    let cut = &b[..b.len().min(MAX)];
    let mut s = if cut.iter().all(|&c| (0x20..0x7f).contains(&c)) {
        String::from_utf8_lossy(cut).into_owned()
    } else {
        let mut h = String::from("0x");
        for c in cut {
            h.push_str(&format!("{c:02x}"));
        }
        h
    };
    if b.len() > MAX {
        s.push_str(&format!("… ({} bytes)", b.len()));
    }
    s
}

/// Parses a key given on the command line: `0x…` is hex, anything else is taken as bytes.
pub fn parse_key(s: &str) -> Result<Vec<u8>> {
    let Some(hex) = s.strip_prefix("0x") else {
        return Ok(s.as_bytes().to_vec());
    };
    if hex.len() % 2 != 0 {
        anyhow::bail!("hex key {s:?} has an odd number of digits");
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).with_context(|| format!("hex key {s:?}")))
        .collect()
}

fn size(b: u64) -> String {
    match b {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}

fn kind(k: ValueKind) -> &'static str {
    match k {
        ValueKind::Put => "put",
        ValueKind::Delete => "delete",
        ValueKind::RangeDelete => "range-delete",
        ValueKind::Merge => "merge",
    }
}

pub fn manifest(
    out: &mut impl Write,
    m: &ManifestDump,
    edits: bool,
    temps: Option<&std::collections::HashMap<u64, (f64, f64)>>,
) -> Result<()> {
    let v = &m.version;
    let (mut fast, mut cap, mut nfast, mut ncap) = (0u64, 0u64, 0usize, 0usize);
    for f in v.all_files() {
        match f.meta.tier {
            strata::tier::Tier::Fast => (fast, nfast) = (fast + f.meta.size, nfast + 1),
            strata::tier::Tier::Capacity => (cap, ncap) = (cap + f.meta.size, ncap + 1),
        }
    }
    let last = m.edits.iter().filter_map(|e| e.last_sequence).max();
    let log = m.log_number();
    writeln!(
        out,
        "manifest {} ({} records{}), last sequence {}, log number {}",
        m.name,
        m.edits.len(),
        match m.torn_tail {
            Some((o, d)) => format!(", torn tail of {d} bytes at {o} dropped"),
            None => String::new(),
        },
        last.map_or("?".into(), |s| s.to_string()),
        log.map_or("?".into(), |s| s.to_string()),
    )?;
    for (id, f) in m.families.iter() {
        writeln!(
            out,
            "column family {id} {:?}: {} levels, {}, log number {}, {} tables, {}",
            f.name,
            f.version.num_levels(),
            f.style.name(),
            f.log_number,
            f.version.all_files().count(),
            size(f.version.all_files().map(|t| t.meta.size).sum()),
        )?;
    }
    writeln!(
        out,
        "tiers: fast {} in {nfast} tables, capacity {} in {ncap} tables ({:.1}% on capacity)",
        size(fast),
        size(cap),
        if fast + cap == 0 {
            0.0
        } else {
            100.0 * cap as f64 / (fast + cap) as f64
        }
    )?;
    writeln!(
        out,
        "hot bytes: not recorded in the manifest (HotRAP's RALT is read by the engine; see INFO hotrap_*)"
    )?;
    match temps {
        Some(_) => writeln!(
            out,
            "temperatures (LogStore, from TEMPERATURE): tables by decayed reads [<1 1-9 10-99 100-999 1k-9.9k >=10k]"
        )?,
        None => writeln!(out, "temperatures: none recorded (static placement)")?,
    }
    let temp_of = |id: u64| temps.and_then(|t| t.get(&id)).copied();
    for (li, level) in v.levels.iter().enumerate() {
        if level.is_empty() {
            continue;
        }
        let histogram = match temps {
            Some(_) => {
                let mut h = [0u64; strata::tier::temperature::TEMPERATURE_BUCKETS];
                for f in level.files() {
                    let t = temp_of(f.meta.id).map_or(0.0, |t| t.0);
                    h[strata::tier::temperature::bucket_of(t)] += 1;
                }
                format!(", temperature {h:?}")
            }
            None => String::new(),
        };
        writeln!(
            out,
            "L{li}: {} runs, {} tables, {}{histogram}",
            level.runs.len(),
            level.num_files(),
            size(level.bytes())
        )?;
        for (ri, run) in level.runs.iter().enumerate() {
            // Split-forest trees carry an id (newest first) and, mid-merge, the journal's cut.
            let tree = if run.id != 0 {
                format!(" (tree {})", run.id)
            } else {
                String::new()
            };
            let cut = match &run.cut {
                Some(c) => format!(
                    "  cut at {} (keys below merged into tree {})",
                    show(c),
                    run.cut_into
                ),
                None => String::new(),
            };
            writeln!(
                out,
                "  run {ri}{tree}: {} tables, {}{cut}",
                run.files.len(),
                size(run.bytes())
            )?;
            for f in &run.files {
                let m = &f.meta;
                let reads = match temp_of(m.id) {
                    Some((t, own)) => format!("  reads {t:.1} (own {own:.1})"),
                    None => String::new(),
                };
                writeln!(
                    out,
                    "    {:06}.sst  {:<8}  {:>10}  {} entries ({} deletes, {} range deletes)  seq {}..{}  [{} .. {}{}{reads}",
                    m.id,
                    m.tier.name(),
                    size(m.size),
                    m.num_entries,
                    m.num_deletions,
                    m.num_range_deletions,
                    m.smallest_seq,
                    m.largest_seq,
                    show(&m.smallest),
                    show(&m.largest),
                    if m.largest_exclusive { ")" } else { "]" },
                )?;
            }
        }
    }
    if edits {
        writeln!(out, "records:")?;
        for (i, e) in m.edits.iter().enumerate() {
            write!(out, "  #{i}:")?;
            if let Some(f) = &e.format {
                write!(out, " format={f}")?;
            }
            if let Some(n) = e.num_levels {
                write!(out, " levels={n}")?;
            }
            if let Some(n) = e.log_number {
                write!(out, " log={n}")?;
            }
            if let Some(n) = e.next_file_number {
                write!(out, " next_file={n}")?;
            }
            if let Some(n) = e.last_sequence {
                write!(out, " last_seq={n}")?;
            }
            tree_edit(out, e)?;
            for f in &e.families_added {
                write!(out, " +family {}={:?}", f.id, f.name)?;
            }
            for id in &e.families_dropped {
                write!(out, " -family {id}")?;
            }
            if let Some(n) = e.next_family_id {
                write!(out, " next_family={n}")?;
            }
            for (id, s) in &e.family_edits {
                write!(out, " [family {id}:")?;
                if let Some(n) = s.num_levels {
                    write!(out, " levels={n}")?;
                }
                if let Some(n) = s.log_number {
                    write!(out, " log={n}")?;
                }
                tree_edit(out, s)?;
                write!(out, "]")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// The table changes of one tree's part of a record.
fn tree_edit(out: &mut impl Write, e: &strata::version::VersionEdit) -> Result<()> {
    for (l, id) in &e.deleted {
        write!(out, " -L{l}:{id:06}")?;
    }
    let added = e
        .added
        .iter()
        .map(|(l, f)| (l, f))
        .chain(e.added_to_run.iter().map(|(l, _, f)| (l, f)));
    for (l, f) in added {
        write!(
            out,
            " +L{l}:{:06}({},{})",
            f.id,
            f.tier.name(),
            size(f.size)
        )?;
    }
    Ok(())
}

pub fn table(
    out: &mut impl Write,
    t: &Arc<Table>,
    location: &str,
    entries: Option<u64>,
) -> Result<()> {
    let p = t.properties();
    writeln!(out, "table {location}")?;
    writeln!(out, "properties:")?;
    writeln!(out, "  entries             {}", p.num_entries)?;
    writeln!(out, "  deletions           {}", p.num_deletions)?;
    writeln!(out, "  range deletions     {}", p.num_range_deletions)?;
    writeln!(out, "  data blocks         {}", p.num_data_blocks)?;
    writeln!(out, "  raw key bytes       {}", p.raw_key_size)?;
    writeln!(out, "  raw value bytes     {}", p.raw_value_size)?;
    writeln!(out, "  data bytes          {}", p.data_size)?;
    writeln!(out, "  index bytes         {}", p.index_size)?;
    writeln!(out, "  filter bytes        {}", p.filter_size)?;
    writeln!(out, "  compression         {}", p.compression)?;
    writeln!(
        out,
        "  sequence numbers    {}..{}",
        p.smallest_seq, p.largest_seq
    )?;
    let tombs = t.range_tombstones();
    if !tombs.is_empty() {
        writeln!(out, "range tombstones:")?;
        for r in tombs {
            writeln!(out, "  [{} .. {}) @{}", show(&r.start), show(&r.end), r.seq)?;
        }
    }
    if let strata::sst::index::TableIndex::Trie(m) = t.index() {
        // A MashMeta trie keeps no separators: show each block's first key that starts in it.
        writeln!(
            out,
            "index: MashMeta trie, {} keys, {} bytes ({:.2} per key), {} blocks:",
            m.num_keys(),
            m.encoded_len(),
            m.encoded_len() as f64 / m.num_keys().max(1) as f64,
            m.num_blocks()
        )?;
        let keys = m.keys();
        let mut first = vec![None; m.num_blocks()];
        for (r, k) in keys.iter().enumerate().rev() {
            if let Some(f) = first.get_mut(m.block_of_key(r)) {
                *f = Some(k);
            }
        }
        for (i, f) in first.iter().enumerate() {
            let h = m.block(i);
            let first = f.map_or_else(|| "(continues the previous key)".into(), |k| show(k));
            writeln!(
                out,
                "  block {i}: offset {} size {}  first new key {first}",
                h.offset, h.size
            )?;
        }
        return entries_of(out, t, entries);
    }
    let index = inspect::index_of(t)?;
    writeln!(out, "index ({} blocks):", index.len())?;
    for (i, (sep, h)) in index.iter().enumerate() {
        let user = strata::types::parse_internal_key(sep)
            .map(|k| show(k.user_key))
            .unwrap_or_else(|e| format!("<{e}>"));
        writeln!(
            out,
            "  block {i}: offset {} size {}  last key <= {user}",
            h.offset, h.size
        )?;
    }
    entries_of(out, t, entries)
}

/// The table's entries, up to `entries` of them (0: all; `None`: none).
fn entries_of(out: &mut impl Write, t: &Arc<Table>, entries: Option<u64>) -> Result<()> {
    let p = t.properties();
    if let Some(limit) = entries {
        writeln!(out, "entries:")?;
        let mut printed = 0u64;
        let mut write_err = None;
        let r = inspect::for_each_entry(t, None, |e| {
            if limit != 0 && printed >= limit {
                return false;
            }
            printed += 1;
            let line = writeln!(
                out,
                "  {} @{} {} {}",
                show(&e.user_key),
                e.seq,
                kind(e.kind),
                show(&e.value)
            );
            match line {
                Ok(()) => true,
                Err(err) => {
                    write_err = Some(err);
                    false
                }
            }
        });
        if let Some(e) = write_err {
            return Err(e.into());
        }
        r?;
        if limit != 0 && printed >= limit && p.num_entries > printed {
            writeln!(
                out,
                "  … {} more (--limit 0 prints all)",
                p.num_entries - printed
            )?;
        }
    }
    Ok(())
}

pub fn wal(out: &mut impl Write, path: &Path, w: &WalDump, limit: usize) -> Result<()> {
    let ops: usize = w.records.iter().map(|r| r.batch.len()).sum();
    writeln!(
        out,
        "wal {} ({} records, {ops} operations{})",
        path.display(),
        w.records.len(),
        match w.torn_tail {
            Some((o, d)) => format!(", torn tail of {d} bytes at {o} dropped"),
            None => String::new(),
        }
    )?;
    for (table, entries, inline) in &w.key_lists {
        writeln!(
            out,
            "  key list of table {table}: {entries} entries ({inline} inline)"
        )?;
    }
    if let Some(next) = w.next_log {
        writeln!(out, "  sealed: the next log is {next:06}.log")?;
    }
    for (i, r) in w.records.iter().enumerate() {
        writeln!(
            out,
            "  record {i}: seq {}, {} operations",
            r.seq,
            r.batch.len()
        )?;
        for (j, (family, op)) in r.batch.iter_cf().enumerate() {
            if limit != 0 && j >= limit {
                writeln!(out, "    … {} more", r.batch.len() - j)?;
                break;
            }
            let seq = r.seq + j as u64;
            // Operations of a column family other than the default name it.
            let cf = if family == 0 {
                String::new()
            } else {
                format!("[cf {family}] ")
            };
            match op {
                BatchOp::Put(k, v) => writeln!(out, "    @{seq} {cf}put {} {}", show(k), show(v))?,
                BatchOp::Delete(k) => writeln!(out, "    @{seq} {cf}delete {}", show(k))?,
                BatchOp::DeleteRange(s, e) => writeln!(
                    out,
                    "    @{seq} {cf}range-delete [{} .. {})",
                    show(s),
                    show(e)
                )?,
                BatchOp::Merge(k, v) => {
                    writeln!(out, "    @{seq} {cf}merge {} {}", show(k), show(v))?
                }
            }
        }
    }
    Ok(())
}

pub fn versions(
    out: &mut impl Write,
    key: &[u8],
    versions: &[KeyVersion],
    opener: &TableOpener,
) -> Result<()> {
    writeln!(out, "key {}: {} versions", show(key), versions.len())?;
    for v in versions {
        let place = match &v.source {
            KeyVersionSource::Wal { file, record } => {
                format!("wal {file} record {record} (memtable, fast tier)")
            }
            KeyVersionSource::Table {
                level,
                run,
                id,
                tier,
            } => format!(
                "L{level} run {run} table {id:06} on the {} tier ({})",
                tier.name(),
                opener.location(*id, *tier)
            ),
        };
        let what = match v.kind {
            ValueKind::Put => format!("put {}", show(&v.value)),
            ValueKind::Delete => "delete".into(),
            ValueKind::RangeDelete => format!("range-delete up to {}", show(&v.value)),
            ValueKind::Merge => format!("merge operand {}", show(&v.value)),
        };
        writeln!(out, "  @{} {what}  in {place}", v.seq)?;
    }
    Ok(())
}

pub fn verify(out: &mut impl Write, r: &VerifyReport) -> Result<()> {
    for f in &r.ok {
        writeln!(out, "ok       {}: {}", f.file, f.detail)?;
    }
    for n in &r.notes {
        writeln!(out, "note     {n}")?;
    }
    for f in &r.unchecked {
        writeln!(out, "UNCHECKED {}: {}", f.file, f.detail)?;
    }
    for f in &r.corrupt {
        writeln!(out, "CORRUPT  {}: {}", f.file, f.detail)?;
    }
    writeln!(
        out,
        "verify: {} files ok, {} corrupt, {} unchecked",
        r.ok.len(),
        r.corrupt.len(),
        r.unchecked.len()
    )?;
    if !r.corrupt.is_empty() {
        let names: Vec<&str> = r.corrupt.iter().map(|f| f.file.as_str()).collect();
        eprintln!("strata inspect verify: corrupt: {}", names.join(", "));
    }
    Ok(())
}
