//! Column families under SIGKILL: a child process (this test binary, re-run in child mode)
//! writes batches that put one key and value into two families, and once per round a write
//! into a third family that then lags behind; it is killed at a random moment, six rounds over
//! one directory. After each kill the reopened database must hold every batch in both families
//! or in neither, every acknowledged write, and every round's write to the lagging family.
//!
//! Replay a failure with `STRATA_SEED=<seed> cargo test --test column_families_crash`.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{cf_db_options, cf_options_small, seeds, with_seed, Rng};
use strata::{CfOptions, Db, WriteBatch, WriteOptions};

// --- Cross-family atomicity under SIGKILL ---------------------------------------------------

const KEYS: u64 = 200;

/// Child mode: batches that write the same key and value into families `a` and `b` (and, one
/// in ten, a marker into the default family), announced before (`I n`) and after (`A n`)
/// their acknowledgement, until killed. Family `c` gets one write per round at the start and
/// nothing after: it lags behind, pinning old logs.
#[test]
fn cf_crash_child() {
    let Ok(dir) = std::env::var("STRATA_CF_CRASH_DIR") else {
        return;
    };
    let round: u64 = std::env::var("STRATA_CF_CRASH_ROUND")
        .unwrap()
        .parse()
        .unwrap();
    let db = Db::open(&dir, cf_db_options()).unwrap();
    let (a, b, c) = (
        db.cf("a").unwrap(),
        db.cf("b").unwrap(),
        db.cf("c").unwrap(),
    );
    db.write_opt(
        {
            let mut w = WriteBatch::new();
            w.put_cf(&c, format!("round{round}"), b"started");
            w
        },
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
    )
    .unwrap();
    println!();
    println!("C {round}");
    let mut rng = Rng::new(round.wrapping_mul(0x9e37_79b9) ^ 77);
    for n in 0.. {
        let id = round * 1_000_000 + n;
        let k = format!("k{:04}", id % KEYS);
        let v = format!("{id:012}");
        let mut batch = WriteBatch::new();
        batch.put_cf(&a, &k, &v);
        batch.put_cf(&b, &k, &v);
        if n % 10 == 0 {
            batch.put(format!("m{id}"), &v);
        }
        println!("I {id}");
        db.write_opt(
            batch,
            &WriteOptions {
                sync: !rng.chance(4),
                ..Default::default()
            },
        )
        .unwrap();
        println!("A {id}");
    }
}

#[test]
fn sigkill_keeps_batches_across_families_atomic() {
    if std::env::var("STRATA_CF_CRASH_DIR").is_ok() {
        return;
    }
    for seed in seeds(1) {
        with_seed("column_families_crash", seed, move || crash_rounds(seed));
    }
}

fn crash_rounds(seed: u64) {
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    {
        let db = Db::open(&path, cf_db_options()).unwrap();
        db.create_cf("a", cf_options_small()).unwrap();
        db.create_cf(
            "b",
            CfOptions {
                write_buffer_size: 64 << 10,
                ..cf_options_small()
            },
        )
        .unwrap();
        db.create_cf("c", CfOptions::default()).unwrap();
        db.close().unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    let mut rounds_started = Vec::new();
    for round in 1..=6u64 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "cf_crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("STRATA_CF_CRASH_DIR", &path)
            .env("STRATA_CF_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                if lines.0.send(l.unwrap()).is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(Duration::from_millis(300 + rng.below(700)));
        child.kill().unwrap();
        child.wait().unwrap();
        for l in lines.1.try_iter() {
            let mut p = l.split_whitespace();
            match (p.next(), p.next()) {
                (Some("A"), Some(id)) => {
                    let id: u64 = id.parse().unwrap();
                    let k = format!("k{:04}", id % KEYS);
                    let e = acked.entry(k).or_default();
                    *e = (*e).max(id);
                }
                (Some("C"), Some(r)) => rounds_started.push(r.parse::<u64>().unwrap()),
                _ => {}
            }
        }
        let db = Db::open(&path, cf_db_options()).unwrap();
        let (a, b, c) = (
            db.cf("a").unwrap(),
            db.cf("b").unwrap(),
            db.cf("c").unwrap(),
        );
        let (sa, sb) = (common::contents_cf(&db, &a), common::contents_cf(&db, &b));
        // Atomic: every batch is in both families or in neither.
        assert_eq!(sa, sb, "round {round}: families a and b differ");
        for (k, id) in &acked {
            let got = sa
                .get(k.as_bytes())
                .map(|v| String::from_utf8_lossy(v).parse::<u64>().unwrap());
            assert!(
                got.is_some_and(|g| g >= *id),
                "round {round}: {k} lost acknowledged {id}, has {got:?}"
            );
        }
        for r in &rounds_started {
            assert!(
                db.get_cf(&c, format!("round{r}")).unwrap().is_some(),
                "round {round}: lagging family lost round {r}"
            );
        }
        db.close().unwrap();
    }
    assert!(!acked.is_empty(), "the child acknowledged writes");
}
