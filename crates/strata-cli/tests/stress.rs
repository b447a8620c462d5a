//! `strata stress` end to end, short: 8 rounds of 2 s (killed children, reopen, verify) must
//! exit 0 and end with the summary line; 5 replica rounds with failovers likewise.
//! `STRATA_SEED` replays a seed.

use std::process::Command;

#[test]
fn stress_short_run_loses_nothing() {
    stress(8, &[]);
}

/// Rounds 1..5 run a replica beside the child, checked for bounded staleness; rounds 1, 3 and 5
/// fail over to it.
#[test]
fn stress_replica_and_failover_rounds_lose_nothing() {
    let stdout = stress(6, &["--replica-rounds"]);
    assert!(
        stdout.contains("5 replica rounds (") && stdout.contains(", 3 failovers to the replica"),
        "{stdout}"
    );
    let checks: u64 = stdout
        .split("replica rounds (")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_default();
    assert!(checks >= 5, "at least one replica check a round: {stdout}");
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
