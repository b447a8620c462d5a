//! `strata stress` end to end, short: 8 rounds of 2 s (killed children, reopen, verify) must
//! exit 0 and end with the summary line; 6 replica rounds with failovers likewise, and 5
//! rounds on databases with column families.
//! `STRATA_SEED` replays a seed.

use std::process::Command;

#[test]
fn stress_short_run_loses_nothing() {
    stress(8, &[]);
}

/// Every round after a database's first runs a replica beside the child, checked for bounded
/// staleness; every other one (at least) fails over to it.
#[test]
fn stress_replica_and_failover_rounds_lose_nothing() {
    let stdout = stress(6, &["--replica-rounds"]);
    // The number before `marker` in the summary.
    let count = |marker: &str| -> u64 {
        stdout
            .split(marker)
            .next()
            .and_then(|s| s.rsplit([' ', '(']).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no {marker:?} in {stdout}"))
    };
    let (databases, replicas) = (count(" databases"), count(" replica rounds"));
    assert_eq!(replicas, 6 - databases, "{stdout}");
    assert!(replicas >= 1, "{stdout}");
    assert!(count(" failovers") >= replicas.div_ceil(2), "{stdout}");
    assert!(count(" replica checks passed") >= replicas, "{stdout}");
}

/// Every database has column families: cross-family batches checked all-or-nothing after
/// each kill, each key read through its own family.
#[test]
fn stress_column_family_rounds_lose_nothing() {
    let stdout = stress(5, &["--column-families"]);
    assert!(
        stdout.contains(" 5 rounds with column families"),
        "{stdout}"
    );
}

/// Runs `strata stress` for `rounds` rounds of 2 s and checks its exit and summary line;
/// returns its standard output.
fn stress(rounds: u64, extra: &[&str]) -> String {
    let seed = strata_test_support::seed("stress");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["stress", "--seconds-per-round", "2", "--no-progress"])
        .args(["--rounds", &rounds.to_string()])
        .args(extra)
        .args(["--seed", &seed.to_string(), "--dir"])
        .arg(dir.path())
        .output()
        .expect("run strata stress");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "strata stress failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains(&format!("seed {seed}")), "{stdout}");
    let last = stdout.lines().last().unwrap_or_default();
    let fields: Vec<&str> = last.split(", ").collect();
    assert_eq!(fields.len(), 4, "summary line {last:?}");
    assert_eq!(fields[0], format!("{rounds} rounds"));
    assert!(fields[1].ends_with(" kills"), "{last:?}");
    assert_eq!(&fields[2..], ["0 lost", "0 phantoms"]);
    stdout.into_owned()
}
