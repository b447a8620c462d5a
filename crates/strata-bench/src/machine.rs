//! Where a run ran: host, OS, CPUs, memory ([`detect`]) and the commit of the working
//! directory ([`commit`]), for reports that can be compared later.
//!
//! Invariants: best effort and read-only — a figure that cannot be found is left empty, never
//! an error. Depends on `results` (for [`Machine`]) only.

use crate::results::Machine;

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The machine this process runs on.
pub fn detect() -> Machine {
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let memory_bytes = read("/proc/meminfo").and_then(|m| {
        m.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let kernel = read("/proc/sys/kernel/osrelease");
    Machine {
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
        os: match kernel {
            Some(k) => format!("{} {k}", std::env::consts::OS),
            None => std::env::consts::OS.to_string(),
        },
        arch: std::env::consts::ARCH.to_string(),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model,
        memory_bytes,
    }
}

/// `git describe --always --dirty` of the current directory (or `STRATA_BENCH_COMMIT`).
pub fn commit() -> Option<String> {
    if let Ok(c) = std::env::var("STRATA_BENCH_COMMIT") {
        return Some(c);
    }
    let out = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty", "--abbrev=10"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}
