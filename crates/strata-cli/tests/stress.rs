//! `strata stress` end to end, short: 8 rounds of 2 s (killed children, reopen, verify) must
//! exit 0 and end with the summary line. `STRATA_SEED` replays a seed.

use std::process::Command;

#[test]
fn stress_short_run_loses_nothing() {
    let seed = strata_test_support::seed("stress");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "stress",
            "--rounds",
            "8",
            "--seconds-per-round",
            "2",
            "--no-progress",
        ])
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
    assert_eq!(fields[0], "8 rounds");
    assert!(fields[1].ends_with(" kills"), "{last:?}");
    assert_eq!(&fields[2..], ["0 lost", "0 phantoms"]);
}
