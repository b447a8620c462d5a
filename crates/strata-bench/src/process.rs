//! What the benchmark process cost the machine during a phase, measured the same way for every
//! engine (they all run inside this process): bytes read from storage (`/proc/self/io`
//! `read_bytes`: page-cache hits are not counted) and bytes the process caused to be written
//! to it (`write_bytes`, counted when a page is dirtied, less `cancelled_write_bytes`: pages of
//! files truncated or deleted before writeback, such as a short-lived table), CPU seconds (`/proc/self/stat` utime + stime, every thread:
//! foreground and background work alike), and the peak resident memory (`VmHWM` of
//! `/proc/self/status`, since the process started).
//!
//! Linux only: elsewhere [`sample`] returns `None` and the report leaves the fields out. The
//! parsers are pure functions over the files' text. Depends on nothing else in the crate.

use serde::{Deserialize, Serialize};

/// One reading of the process counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessSample {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub cpu_secs: f64,
    pub peak_rss_bytes: u64,
}

/// A phase's process figures: differences of two samples, per operation, and the peak
/// resident memory at the phase's end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessReport {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_bytes_per_op: Option<f64>,
    pub write_bytes_per_op: Option<f64>,
    pub cpu_secs: f64,
    /// CPU microseconds per operation (all threads, background work included).
    pub cpu_micros_per_op: Option<f64>,
    pub peak_rss_bytes: u64,
}

/// The process counters now (`None` off Linux or when `/proc` cannot be read).
pub fn sample() -> Option<ProcessSample> {
    let io = std::fs::read_to_string("/proc/self/io").ok()?;
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    // `/proc` reports CPU time in USER_HZ ticks, 100 a second on every Linux ABI (the kernel
    // converts from its internal HZ; `sysconf(_SC_CLK_TCK)` returns this constant).
    const TICKS_PER_SEC: f64 = 100.0;
    Some(ProcessSample {
        read_bytes: io_field(&io, "read_bytes")?,
        write_bytes: io_field(&io, "write_bytes")?
            .saturating_sub(io_field(&io, "cancelled_write_bytes").unwrap_or(0)),
        cpu_secs: cpu_ticks(&stat)? as f64 / TICKS_PER_SEC,
        peak_rss_bytes: status_kib(&status, "VmHWM")? * 1024,
    })
}

/// The report of a phase of `ops` operations between `before` and `after`.
pub fn report(before: &ProcessSample, after: &ProcessSample, ops: u64) -> ProcessReport {
    let read = after.read_bytes.saturating_sub(before.read_bytes);
    let write = after.write_bytes.saturating_sub(before.write_bytes);
    let cpu = (after.cpu_secs - before.cpu_secs).max(0.0);
    let per_op = |v: f64| (ops > 0).then(|| v / ops as f64);
    ProcessReport {
        read_bytes: read,
        write_bytes: write,
        read_bytes_per_op: per_op(read as f64),
        write_bytes_per_op: per_op(write as f64),
        cpu_secs: cpu,
        cpu_micros_per_op: per_op(cpu * 1e6),
        peak_rss_bytes: after.peak_rss_bytes,
    }
}

/// A `name: value` line of `/proc/<pid>/io`.
fn io_field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().parse().ok())?
    })
}

/// A `Name:   1234 kB` line of `/proc/<pid>/status`, in KiB.
fn status_kib(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        if k.trim() != name {
            return None;
        }
        v.split_whitespace().next()?.parse().ok()
    })
}

/// utime + stime (fields 14 and 15) of `/proc/<pid>/stat`. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_whitespace().skip(11); // field 3 is the first after `)`
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    Some(utime + stime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_proc_files() {
        let io = "rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n\
                  write_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(io_field(io, "read_bytes"), Some(4096));
        assert_eq!(io_field(io, "write_bytes"), Some(8192));
        assert_eq!(io_field(io, "missing"), None);
        let status =
            "Name:\tstrata-bench\nVmPeak:\t  200 kB\nVmHWM:\t   1536 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(status_kib(status, "VmHWM"), Some(1536));
        // A command name with spaces and a parenthesis must not shift the fields.
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194304 10 0 0 0 250 75 0 0 20 0 3 0 100";
        assert_eq!(cpu_ticks(stat), Some(325));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn a_report_is_the_difference_per_operation() {
        let a = ProcessSample {
            read_bytes: 1000,
            write_bytes: 0,
            cpu_secs: 1.0,
            peak_rss_bytes: 10,
        };
        let b = ProcessSample {
            read_bytes: 5000,
            write_bytes: 2000,
            cpu_secs: 3.0,
            peak_rss_bytes: 20,
        };
        let r = report(&a, &b, 1000);
        assert_eq!((r.read_bytes, r.write_bytes), (4000, 2000));
        assert_eq!(r.read_bytes_per_op, Some(4.0));
        assert_eq!(r.cpu_micros_per_op, Some(2000.0));
        assert_eq!(r.peak_rss_bytes, 20);
        assert_eq!(report(&a, &b, 0).write_bytes_per_op, None);
        assert!(sample().is_some() || !cfg!(target_os = "linux"));
    }
}
