//! `strata serve --metrics-port 0` on a tiered database: after some traffic, `/metrics` parses
//! as Prometheus text and holds per-command counters and latency histograms, engine read and
//! write latency histograms labelled by tier, compaction bytes and cache hit ratios.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::ServerProcess;
use prometheus_parse::{Scrape, Value};

fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics port");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    (head.to_string(), body.to_string())
}

fn value(v: &Value) -> f64 {
    match v {
        Value::Counter(x) | Value::Gauge(x) | Value::Untyped(x) => *x,
        other => panic!("not a single value: {other:?}"),
    }
}

#[test]
fn metrics_endpoint_parses_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let cap = format!("file://{}", dir.path().join("capacity").display());
    let server = ServerProcess::start(
        &dir.path().join("db"),
        &[
            "--metrics-port",
            "0",
            "--capacity",
            &cap,
            "--write-buffer-size",
            "1mb",
        ],
    );
    let log = server.log_text();
    let addr = log
        .lines()
        .find_map(|l| l.split("metrics on http://").nth(1))
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("metrics address in the log: {log}"))
        .to_string();

    let mut c = server.conn();
    let big = "v".repeat(1000);
    for i in 0..3000 {
        let _: () = redis::cmd("SET")
            .arg(format!("k{i:05}"))
            .arg(&big)
            .query(&mut c)
            .unwrap();
    }
    for i in 0..500 {
        let _: Option<String> = redis::cmd("GET")
            .arg(format!("k{i:05}"))
            .query(&mut c)
            .unwrap();
    }
    let _: () = redis::cmd("DEBUG").arg("flush").query(&mut c).unwrap_or(());

    let (head, body) = http_get(&addr, "/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).expect("parse");
    let find = |name: &str, label: Option<(&str, &str)>| {
        scrape
            .samples
            .iter()
            .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
            .unwrap_or_else(|| panic!("{name} {label:?} missing:\n{body}"))
    };

    assert_eq!(
        value(&find("strata_commands_total", Some(("cmd", "set"))).value),
        3000.0
    );
    assert_eq!(
        value(&find("strata_commands_total", Some(("cmd", "get"))).value),
        500.0
    );
    match &find("strata_command_duration_seconds", Some(("cmd", "get"))).value {
        Value::Histogram(h) => {
            let inf = h.iter().find(|b| b.less_than.is_infinite()).expect("+Inf");
            assert_eq!(inf.count, 500.0, "{body}");
        }
        v => panic!("histogram expected: {v:?}"),
    }
    for tier in ["fast", "capacity"] {
        let s = find("strata_engine_read_duration_seconds", Some(("tier", tier)));
        assert!(matches!(s.value, Value::Histogram(_)), "{body}");
        let s = find("strata_engine_write_duration_seconds", Some(("tier", tier)));
        assert!(matches!(s.value, Value::Histogram(_)), "{body}");
    }
    // 3 MB of writes through 1 MB memtables: flushes wrote fast-tier tables.
    match &find(
        "strata_engine_write_duration_seconds",
        Some(("tier", "fast")),
    )
    .value
    {
        Value::Histogram(h) => {
            let inf = h.iter().find(|b| b.less_than.is_infinite()).expect("+Inf");
            assert!(inf.count > 0.0, "{body}");
        }
        v => panic!("histogram expected: {v:?}"),
    }
    assert!(value(&find("strata_flush_written_bytes_total", None).value) > 1e6);
    find("strata_compaction_written_bytes_total", None);
    find("strata_write_stall_seconds_total", None);
    for cache in ["block", "persistent", "fast_tier"] {
        let v = value(&find("strata_cache_hit_ratio", Some(("cache", cache))).value);
        assert!((0.0..=1.0).contains(&v), "{cache}: {v}");
    }
    find(
        "strata_hotrap_promoted_records_total",
        Some(("pathway", "flush")),
    );
    for s in &scrape.samples {
        assert!(s.metric.starts_with("strata_"), "{}", s.metric);
    }

    let (head, _) = http_get(&addr, "/nope");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}
