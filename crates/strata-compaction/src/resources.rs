//! What a worker reports in its heartbeats (CaaS-LSM §4.2): its CPU use over the cores it may
//! use, the host's memory use, free space where it stages outputs, and network throughput,
//! read from `/proc` and `statvfs` (Linux). Missing sources read as idle and unbounded.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::proto::Resources;

/// Clock ticks per second of `/proc/self/stat` (`USER_HZ`, 100 on Linux).
const TICKS: f64 = 100.0;

/// Samples resources, keeping the previous readings to turn counters into rates.
pub struct Sampler {
    cores: f64,
    last: Option<(Instant, f64, u64, u64)>,
}

impl Default for Sampler {
    fn default() -> Self {
        Self::new()
    }
}

impl Sampler {
    pub fn new() -> Self {
        Sampler {
            cores: std::thread::available_parallelism()
                .map(|n| n.get() as f64)
                .unwrap_or(1.0),
            last: None,
        }
    }

    pub fn sample(&mut self, scratch: &Path) -> Resources {
        let now = Instant::now();
        let cpu_secs = process_cpu_secs().unwrap_or(0.0);
        let (rx, tx) = network_bytes().unwrap_or((0, 0));
        let (total, available) = memory().unwrap_or((0, u64::MAX));
        let mut r = Resources {
            memory: if total > 0 {
                1.0 - available as f64 / total as f64
            } else {
                0.0
            },
            memory_free_bytes: available,
            disk_free_bytes: disk_free(scratch).unwrap_or(u64::MAX),
            ..Default::default()
        };
        if let Some((at, cpu0, rx0, tx0)) = self.last {
            let dt = now
                .saturating_duration_since(at)
                .max(Duration::from_millis(1));
            let secs = dt.as_secs_f64();
            r.cpu = ((cpu_secs - cpu0) / secs / self.cores).clamp(0.0, 1.0);
            r.net_rx_bytes_per_sec = (rx.saturating_sub(rx0) as f64 / secs) as u64;
            r.net_tx_bytes_per_sec = (tx.saturating_sub(tx0) as f64 / secs) as u64;
        }
        self.last = Some((now, cpu_secs, rx, tx));
        r
    }
}

/// User plus system CPU time of this process.
fn process_cpu_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at state (field 3).
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS)
}

/// (total, available) bytes.
fn memory() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some((field("MemTotal:")?, field("MemAvailable:")?))
}

/// Received and sent bytes over all interfaces.
fn network_bytes() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/net/dev").ok()?;
    let mut rx = 0u64;
    let mut tx = 0u64;
    for line in s.lines().skip(2) {
        let (_, nums) = line.split_once(':')?;
        let f: Vec<u64> = nums
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        rx += f.first().copied().unwrap_or(0);
        tx += f.get(8).copied().unwrap_or(0);
    }
    Some((rx, tx))
}

fn disk_free(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statvfs.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_sane() {
        let mut s = Sampler::new();
        let dir = std::env::temp_dir();
        let a = s.sample(&dir);
        // Burn some CPU so the second sample sees use.
        let mut x = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let b = s.sample(&dir);
        assert_eq!(a.cpu, 0.0, "no rate from one sample");
        assert!(b.cpu > 0.0 && b.cpu <= 1.0, "{b:?}");
        assert!(b.memory > 0.0 && b.memory < 1.0, "{b:?}");
        assert!(b.disk_free_bytes > 0 && b.memory_free_bytes > 0, "{b:?}");
    }
}
