//! Model-based randomized test: a `BTreeMap` oracle against the engine under puts, deletes,
//! range deletes, merges (half the runs, with the append operator), batches, snapshots and
//! iterators in both directions, interleaved with
//! flushes, compactions and reopens. A failing seed is printed and can be replayed with
//! `STRATA_SEED=<seed> cargo test --test model`.

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;

use common::{key, seeds, small_options, with_seed, Rng};
use strata::{Db, Options, ReadOptions, Snapshot, WriteBatch};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn value(rng: &mut Rng, seq: u64) -> Vec<u8> {
    let len = [1, 10, 100, 1000, 5000][rng.below(5) as usize];
    let mut v = format!("v{seq}-").into_bytes();
    v.resize(len.max(v.len()), b'a' + (seq % 26) as u8);
    v
}

/// What `strata::merge::Append` with "," makes of `operand` merged into `k`.
fn append(model: &mut Model, k: Vec<u8>, operand: &[u8]) {
    match model.get_mut(&k) {
        Some(v) => {
            v.push(b',');
            v.extend_from_slice(operand);
        }
        None => {
            model.insert(k, operand.to_vec());
        }
    }
}

fn check_get(db: &Db, ro: &ReadOptions, model: &Model, k: &[u8], ctx: &str) {
    // A memory-only lookup answers exactly as a full one, or says it would need I/O.
    let mem = ReadOptions {
        cache_only: true,
        ..ro.clone()
    };
    match db.get_opt(&mem, k) {
        Ok(got) => assert_eq!(
            got.as_deref(),
            model.get(k).map(|v| v.as_slice()),
            "{ctx}: cache_only get({})",
            String::from_utf8_lossy(k)
        ),
        Err(e) => assert_eq!(e.kind(), strata::ErrorKind::Incomplete, "{ctx}: {e}"),
    }
    let got = db.get_opt(ro, k).expect("get");
    assert_eq!(
        got.as_deref(),
        model.get(k).map(|v| v.as_slice()),
        "{ctx}: get({})",
        String::from_utf8_lossy(k)
    );
}

/// `Db::multi_get` of a batch of keys (absent ones, duplicates, runs of neighbours that share a
/// table) answers each key as the model does; memory-only, each key as the model or
/// `Incomplete`.
fn check_multi_get(db: &Db, ro: &ReadOptions, model: &Model, rng: &mut Rng, ctx: &str) {
    let n = 1 + rng.below(40);
    let keys: Vec<Vec<u8>> = if rng.chance(50) {
        (0..n).map(|_| key(rng.below(330))).collect()
    } else {
        let start = rng.below(300);
        (start..start + n).map(key).collect()
    };
    let mem = ReadOptions {
        cache_only: true,
        ..ro.clone()
    };
    for (k, got) in keys.iter().zip(db.multi_get(&mem, &keys)) {
        match got {
            Ok(got) => assert_eq!(
                got.as_deref(),
                model.get(k).map(|v| v.as_slice()),
                "{ctx}: cache_only multi_get: {}",
                String::from_utf8_lossy(k)
            ),
            Err(e) => assert_eq!(e.kind(), strata::ErrorKind::Incomplete, "{ctx}: {e}"),
        }
    }
    let got = db.multi_get(ro, &keys);
    assert_eq!(got.len(), keys.len());
    for (k, got) in keys.iter().zip(got) {
        assert_eq!(
            got.expect("multi_get").as_deref(),
            model.get(k).map(|v| v.as_slice()),
            "{ctx}: multi_get: {}",
            String::from_utf8_lossy(k)
        );
    }
}

fn model_range(
    model: &Model,
    lo: &Option<Vec<u8>>,
    hi: &Option<Vec<u8>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let lb = lo
        .as_ref()
        .map_or(Bound::Unbounded, |l| Bound::Included(l.clone()));
    let ub = hi
        .as_ref()
        .map_or(Bound::Unbounded, |h| Bound::Excluded(h.clone()));
    if let (Some(l), Some(h)) = (lo, hi) {
        if l >= h {
            return Vec::new();
        }
    }
    model
        .range((lb, ub))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn ro_clone(ro: &ReadOptions) -> ReadOptions {
    ro.clone()
}

fn check_iter(db: &Db, snap: Option<Snapshot>, model: &Model, rng: &mut Rng, ctx: &str) {
    let lo = rng.chance(30).then(|| key(rng.below(300)));
    let hi = rng.chance(30).then(|| key(rng.below(300)));
    let want = model_range(model, &lo, &hi);
    let ro = ReadOptions {
        snapshot: snap,
        lower_bound: lo.clone(),
        upper_bound: hi.clone(),
        ..Default::default()
    };
    let it_opts = ro.clone();
    let mut it = db.iter(ro).expect("iter");
    // Full forward and backward scans.
    it.seek_to_first();
    let mut got = Vec::new();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().expect("iter status");
    if got.len() != want.len() {
        let gk: std::collections::BTreeSet<_> = got
            .iter()
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect();
        let wk: std::collections::BTreeSet<_> = want
            .iter()
            .map(|(k, _)| String::from_utf8_lossy(k).into_owned())
            .collect();
        let probe: Vec<_> = gk
            .symmetric_difference(&wk)
            .map(|k| (k.clone(), db.get(k.as_bytes()).unwrap().map(|v| v.len())))
            .collect();
        panic!(
            "{ctx}: forward scan length {} != {} (bounds {lo:?}..{hi:?}); extra {:?} missing {:?}; gets {probe:?}\n{}",
            got.len(),
            want.len(),
            gk.difference(&wk).collect::<Vec<_>>(),
            wk.difference(&gk).collect::<Vec<_>>(),
            db.property("strata.stats").unwrap()
        );
    }
    assert!(got == want, "{ctx}: forward scan contents");
    // A memory-only scan gives the same entries, or a prefix of them and `Incomplete`.
    match db.iter(ReadOptions {
        cache_only: true,
        ..ro_clone(&it_opts)
    }) {
        Ok(mut mem) => {
            mem.seek_to_first();
            let mut seen = Vec::new();
            while mem.valid() {
                seen.push((mem.key().to_vec(), mem.value().to_vec()));
                mem.next();
            }
            match mem.status() {
                Ok(()) => assert!(seen == want, "{ctx}: cache_only scan contents"),
                Err(e) => {
                    assert_eq!(e.kind(), strata::ErrorKind::Incomplete, "{ctx}: {e}");
                    assert!(want.starts_with(&seen), "{ctx}: cache_only scan prefix");
                }
            }
        }
        Err(e) => assert_eq!(e.kind(), strata::ErrorKind::Incomplete, "{ctx}: {e}"),
    }
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    back.reverse();
    assert!(
        back == want,
        "{ctx}: backward scan ({} vs {})",
        back.len(),
        want.len()
    );
    // Random seeks and a random walk.
    for _ in 0..4 {
        let t = key(rng.below(300));
        let mut pos: Option<usize> = if rng.chance(50) {
            it.seek(&t);
            let p = want.partition_point(|(k, _)| k < &t);
            (p < want.len()).then_some(p)
        } else {
            it.seek_for_prev(&t);
            let p = want.partition_point(|(k, _)| k <= &t);
            p.checked_sub(1)
        };
        for _ in 0..12 {
            match pos {
                None => {
                    assert!(
                        !it.valid(),
                        "{ctx}: iterator should be exhausted after seek to {t:?}"
                    );
                    break;
                }
                Some(p) => {
                    assert!(
                        it.valid(),
                        "{ctx}: iterator invalid, expected {:?}",
                        want[p].0
                    );
                    assert_eq!(it.key(), &want[p].0[..], "{ctx}: walk key");
                    assert_eq!(it.value(), &want[p].1[..], "{ctx}: walk value");
                }
            }
            if rng.chance(50) {
                it.next();
                pos = pos.and_then(|p| (p + 1 < want.len()).then_some(p + 1));
            } else {
                it.prev();
                pos = pos.and_then(|p| p.checked_sub(1));
            }
        }
    }
}

/// How a model run places its tables.
#[derive(Clone, Copy, Debug)]
enum Tiering {
    /// Everything on the fast tier.
    Local,
    /// Most data on an in-memory object store.
    Memory,
    /// Most data on a `file://` object store that fails 5% of requests (transient errors and
    /// timeouts), which the engine must retry through.
    FileWithFaults,
    /// Most data on the S3-compatible server named by `STRATA_S3_URL` (e.g. a local moto).
    S3,
    /// In-memory capacity tier, relative placement and HotRAP on with a tiny promotion cache
    /// (sealed every few reads) and a deterministic hot set: every pathway and its races run.
    HotRap,
    /// In-memory capacity tier with LogStore placement: fast ticks, a short half-life and a cost
    /// model pinned so that reverse and staging compactions pay off after a read or two, so
    /// informed, reverse, staging and deferred compactions all run and chase each other.
    LogStore,
    /// LogStore and HotRAP together.
    LogStoreHotRap,
}

fn tiered(rng: &mut Rng, o: &mut Options, dir: &std::path::Path, t: Tiering, seed: u64) {
    use strata::cache::persistent::{PersistentCacheKind, PersistentCacheOptions};
    use strata::storage::object::{CapacityOptions, Emulation};
    let url = match t {
        Tiering::Local => return,
        Tiering::Memory | Tiering::HotRap | Tiering::LogStore | Tiering::LogStoreHotRap => {
            format!("memory://model-{seed}")
        }
        Tiering::FileWithFaults => format!("file://{}/capacity", dir.display()),
        Tiering::S3 => format!(
            "{}/model-{seed}",
            std::env::var("STRATA_S3_URL")
                .expect("STRATA_S3_URL")
                .trim_end_matches('/')
        ),
    };
    let mut c = CapacityOptions::new(url);
    c.part_size = 5 << 20;
    if let Tiering::FileWithFaults = t {
        c.emulation = Some(Emulation {
            error_rate: 0.04,
            timeout_rate: 0.01,
            timeout_delay: std::time::Duration::from_millis(5),
            seed,
            ..Default::default()
        });
        c.max_attempts = 12;
    }
    o.capacity = Some(c);
    o.fast_levels = Some(rng.below(2) as usize);
    if let Tiering::LogStore | Tiering::LogStoreHotRap = t {
        o.fast_levels = None;
        o.capacity_levels = 1 + rng.below(2) as usize;
        o.max_bytes_for_level_base = 2048 + rng.below(4096);
        o.placement_policy = strata::tier::PlacementPolicy::LogStore;
        o.logstore = strata::tier::LogStoreOptions {
            half_life: std::time::Duration::from_millis(50 + rng.below(500)),
            rate_half_life: std::time::Duration::from_millis(20 + rng.below(200)),
            tick: std::time::Duration::from_millis(5 + rng.below(20)),
            persist_interval: std::time::Duration::from_millis(20 + rng.below(200)),
            cold_fraction: [0.1, 0.5, 1.0][rng.below(3) as usize],
            reverse_margin: [1.0, 2.0][rng.below(2) as usize],
            // Half the runs defer whenever reads fall under half the operations.
            defer_read_fraction: [0.0, 0.5][rng.below(2) as usize],
            defer_fast_bytes: Some(1024 + rng.below(4096)),
            // A read or two pays for a reverse or staging compaction of these small tables.
            costs: Some(strata::tier::temperature::TierCosts {
                fast_seek: 1e-3,
                capacity_seek: 0.05,
                fast_bw: 1e8,
                capacity_bw: 1e7,
            }),
        };
    }
    if let Tiering::HotRap | Tiering::LogStoreHotRap = t {
        o.fast_levels = None;
        o.capacity_levels = 1 + rng.below(2) as usize;
        o.max_bytes_for_level_base = 2048 + rng.below(4096);
        // Half the runs use RALT itself (tiny buffer and limits), half a deterministic hot set:
        // keys whose number ends in 0 or 5 are hot once read twice. Hot sets stay small
        // beside the fast levels, so compactions into the capacity tier (and retention) run.
        let real = rng.chance(50);
        let mut ralt =
            strata::tier::hot::ralt::RaltOptions::for_fast_tier(dir.join("unused"), 8 << 10);
        ralt.buffer_bytes = 512 + rng.below(2048) as usize;
        o.hotrap = strata::tier::hot::HotRapOptions {
            enabled: true,
            promotion_cache_bytes: Some(256 + rng.below(2048) as usize),
            fast_tier_bytes: None,
            ralt: Some(ralt),
            tracker: (!real).then(|| {
                std::sync::Arc::new(common::OracleTracker::new(2, |k| {
                    k.last().is_some_and(|b| *b == b'0' || *b == b'5')
                })) as std::sync::Arc<dyn strata::tier::hot::HotTracker>
            }),
        };
    }
    o.persistent_cache = PersistentCacheOptions {
        kind: [
            PersistentCacheKind::None,
            PersistentCacheKind::Lap,
            PersistentCacheKind::Naive,
        ][rng.below(3) as usize],
        capacity: 256 * 1024,
        bucket_size: 16 * 1024,
        unit_size: 256,
        file_size: 32 * 1024,
    };
}

fn run(seed: u64, steps: usize) {
    run_tiered(seed, steps, Tiering::Local)
}

fn run_tiered(seed: u64, steps: usize, tiering: Tiering) {
    run_with(seed, steps, tiering, false)
}

/// Split-forest options: few trees per level and early cleaning after every table or few, so
/// merges, moves, checkpoints and cut trees all happen with little data.
fn split_forest(rng: &mut Rng, o: &mut Options) {
    o.compaction_style = strata::CompactionStyle::SplitForest;
    o.forest = strata::compaction::ForestOptions {
        trees_per_level: 2 + rng.below(3) as usize,
        cleaning_threshold: rng.below(4) as usize,
        search_threads: [0, 2, 8][rng.below(3) as usize],
    };
    // Small, uncompressed tables (the values compress well): merges seal many outputs, so
    // checkpoints and cut trees are frequent.
    o.target_file_size_base = 4096;
    o.compression_per_level = vec![strata::Compression::None];
}

fn run_with(seed: u64, steps: usize, tiering: Tiering, forest: bool) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut opts: Options = small_options(&mut rng);
    tiered(&mut rng, &mut opts, dir.path(), tiering, seed);
    if forest {
        split_forest(&mut rng, &mut opts);
    }
    // Half the runs write merge operands too (strata::merge::Append with ","): some puts
    // become merges, which the model applies as the operator does.
    let with_merges = rng.chance(50);
    if with_merges {
        opts.merge_operator = Some(std::sync::Arc::new(strata::merge::Append::new(b",")));
    }
    let mut db = Db::open(dir.path(), opts.clone()).unwrap();
    let mut model = Model::new();
    let mut snaps: Vec<(Snapshot, Model)> = Vec::new();
    let mut seq = 0u64;
    // Split-forest merges over all opens (statistics restart at each open).
    let mut merges = 0;
    // Capacity-tier PUTs over all opens (LogStore may pull everything back up by the end).
    let mut puts = 0;
    for step in 0..steps {
        let ctx = format!("seed {seed} step {step}");
        seq += 1;
        match rng.below(100) {
            0..=34 if with_merges && rng.chance(40) => {
                let k = key(rng.below(300));
                let operand = format!("m{seq}").into_bytes();
                db.merge(&k, &operand).unwrap();
                append(&mut model, k, &operand);
            }
            0..=34 => {
                let k = key(rng.below(300));
                let v = value(&mut rng, seq);
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            35..=44 => {
                let k = key(rng.below(300));
                db.delete(&k).unwrap();
                model.remove(&k);
            }
            45..=47 => {
                let a = rng.below(300);
                let b = a + rng.below(30);
                let (ka, kb) = (key(a), key(b));
                db.delete_range(&ka, &kb).unwrap();
                let doomed: Vec<_> = model.range(ka..kb).map(|(k, _)| k.clone()).collect();
                for k in doomed {
                    model.remove(&k);
                }
            }
            48..=54 => {
                let mut b = WriteBatch::new();
                for _ in 0..1 + rng.below(20) {
                    let k = key(rng.below(300));
                    if with_merges && rng.chance(30) {
                        let operand = format!("b{seq}").into_bytes();
                        b.merge(&k, &operand);
                        append(&mut model, k, &operand);
                    } else if rng.chance(75) {
                        let v = value(&mut rng, seq);
                        b.put(&k, &v);
                        model.insert(k, v);
                    } else {
                        b.delete(&k);
                        model.remove(&k);
                    }
                }
                db.write(b).unwrap();
            }
            55..=69 => {
                let k = key(rng.below(300));
                check_get(&db, &ReadOptions::default(), &model, &k, &ctx);
            }
            70..=74 => check_multi_get(&db, &ReadOptions::default(), &model, &mut rng, &ctx),
            75..=79 => {
                if snaps.len() < 4 {
                    snaps.push((db.snapshot(), model.clone()));
                } else {
                    snaps.remove(rng.below(snaps.len() as u64) as usize);
                }
            }
            80..=84 => {
                if !snaps.is_empty() {
                    let i = rng.below(snaps.len() as u64) as usize;
                    let (s, m) = &snaps[i];
                    let ro = ReadOptions {
                        snapshot: Some(s.clone()),
                        ..Default::default()
                    };
                    for _ in 0..5 {
                        let k = key(rng.below(300));
                        check_get(&db, &ro, m, &k, &format!("{ctx} (snapshot)"));
                    }
                    check_multi_get(&db, &ro, m, &mut rng, &format!("{ctx} (snapshot)"));
                    check_iter(
                        &db,
                        Some(s.clone()),
                        m,
                        &mut rng,
                        &format!("{ctx} (snapshot iter)"),
                    );
                }
            }
            85..=89 => check_iter(&db, None, &model, &mut rng, &ctx),
            90..=92 => db.flush().unwrap(),
            93..=94 => {
                let a = rng.chance(50).then(|| key(rng.below(300)));
                let b = rng.chance(50).then(|| key(rng.below(300)));
                db.compact_range(a.as_deref(), b.as_deref()).unwrap();
            }
            95..=96 => db.wait_for_compactions().unwrap(),
            _ => {
                snaps.clear();
                merges += db.stats().forest.merges;
                puts += db.stats().tier.capacity_puts;
                db.close().unwrap();
                db = Db::open(dir.path(), opts.clone()).unwrap();
            }
        }
    }
    // Final full verification, including after a reopen.
    for k in 0..300 {
        check_get(&db, &ReadOptions::default(), &model, &key(k), "final");
    }
    check_iter(&db, None, &model, &mut rng, "final");
    snaps.clear();
    if !matches!(tiering, Tiering::Local) {
        let s = db.stats();
        assert!(
            db.live_tables()
                .iter()
                .any(|(_, f)| f.tier == strata::tier::Tier::Capacity)
                || s.tier.capacity_puts + puts > 0,
            "seed {seed}: the capacity tier was never used:\n{s}"
        );
        if let Tiering::HotRap | Tiering::LogStoreHotRap = tiering {
            let h = s.hotrap.expect("HotRAP is on");
            eprintln!("seed {seed}: {h}");
        }
        if let Tiering::LogStore | Tiering::LogStoreHotRap = tiering {
            let l = s.logstore.expect("LogStore is on");
            eprintln!("seed {seed}: {l}");
        }
        if let Tiering::FileWithFaults = tiering {
            let em = db.capacity_tier().unwrap();
            let injected = em
                .emulation()
                .unwrap()
                .stats()
                .injected_errors
                .load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                injected == 0 || s.tier.capacity_retries > 0,
                "faults were not retried"
            );
        }
    }
    if forest {
        let f = db.stats().forest;
        eprintln!("seed {seed}: split forest (this open) {f:?}");
        merges += f.merges;
        assert!(merges > 0, "seed {seed}: no split-forest merge ran");
    }
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    for k in 0..300 {
        check_get(
            &db,
            &ReadOptions::default(),
            &model,
            &key(k),
            "after reopen",
        );
    }
}

#[test]
fn model_randomized() {
    let n: u64 = std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    for seed in seeds(n) {
        with_seed("model", seed, move || run(seed, 1500));
    }
}

fn model_seeds(default: u64) -> u64 {
    std::env::var("STRATA_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[test]
fn model_tiered_memory() {
    for seed in seeds(model_seeds(12) / 2) {
        with_seed("model", seed, move || {
            run_tiered(seed, 1200, Tiering::Memory)
        });
    }
}

#[test]
fn model_hotrap() {
    for seed in seeds(model_seeds(12) / 2) {
        with_seed("model", seed, move || {
            run_tiered(seed, 2000, Tiering::HotRap)
        });
    }
}

#[test]
fn model_logstore() {
    for seed in seeds(model_seeds(12) / 2) {
        with_seed("model", seed, move || {
            run_tiered(seed, 2000, Tiering::LogStore)
        });
    }
}

#[test]
fn model_logstore_hotrap() {
    for seed in seeds(model_seeds(12) / 4) {
        with_seed("model", seed, move || {
            run_tiered(seed, 2000, Tiering::LogStoreHotRap)
        });
    }
}

#[test]
fn model_tiered_file_with_faults() {
    for seed in seeds(model_seeds(12) / 4) {
        with_seed("model", seed, move || {
            run_tiered(seed, 1000, Tiering::FileWithFaults)
        });
    }
}

#[test]
fn model_split_forest() {
    for seed in seeds(model_seeds(12) / 2) {
        with_seed("model", seed, move || {
            run_with(seed, 2000, Tiering::Local, true)
        });
    }
}

#[test]
fn model_split_forest_tiered() {
    for seed in seeds(model_seeds(12) / 4) {
        with_seed("model", seed, move || {
            run_with(seed, 1500, Tiering::Memory, true)
        });
    }
}

#[test]
fn model_split_forest_hotrap() {
    for seed in seeds(model_seeds(12) / 4) {
        with_seed("model", seed, move || {
            run_with(seed, 1500, Tiering::HotRap, true)
        });
    }
}

/// Runs when `STRATA_S3_URL` names a bucket on an S3-compatible server (scripts/test.sh starts
/// one on loopback and sets it); skipped, with a message, otherwise.
#[test]
fn model_tiered_s3() {
    if std::env::var("STRATA_S3_URL").is_err() {
        eprintln!("model_tiered_s3: STRATA_S3_URL is not set; skipped");
        return;
    }
    for seed in seeds(1) {
        with_seed("model", seed, move || run_tiered(seed, 800, Tiering::S3));
    }
}
