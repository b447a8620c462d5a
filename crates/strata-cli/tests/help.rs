//! `strata serve --help`: every flag's description sits under that flag (a doc comment once
//! slipped, putting `--set`'s text under `--capacity`), and no flag is left without one.

use std::process::Command;

#[test]
fn serve_help_describes_each_flag_under_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--help"])
        .output()
        .expect("run strata serve --help");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let block = |flag: &str| -> String {
        let i = lines
            .iter()
            .position(|l| l.trim_start().starts_with(flag))
            .unwrap_or_else(|| panic!("{flag} missing:\n{text}"));
        lines[i + 1..]
            .iter()
            .take_while(|l| !l.trim_start().starts_with("--") && !l.trim().is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(block("--set ").contains("Any setting"), "{text}");
    assert!(block("--capacity ").contains("Capacity tier"), "{text}");
    assert!(!block("--capacity ").contains("Any setting"), "{text}");
    assert!(
        block("--persistent-cache-size").contains("persistent cache"),
        "{text}"
    );
    assert!(block("--metrics-port").contains("Prometheus"), "{text}");
    // Every option has a description line.
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start();
        if t.starts_with("--") && !t.starts_with("--help") && !t.starts_with("--version") {
            let next = lines.get(i + 1).map_or("", |n| n.trim());
            assert!(
                !next.is_empty() && !next.starts_with("--") && !next.starts_with("-h"),
                "{t} has no description:\n{text}"
            );
        }
    }
}
