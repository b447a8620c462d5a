//! The differential test's wire: a raw RESP2 connection that returns each reply's exact bytes,
//! and the comparison helpers (replies of unordered commands sorted, TTLs within a second).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::common::resp;

/// A raw RESP2 connection: sends a request, returns the reply's exact bytes.
pub struct Wire {
    r: BufReader<TcpStream>,
}

impl Wire {
    pub fn connect(addr: SocketAddr) -> std::io::Result<Wire> {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(30)))?;
        s.set_nodelay(true)?;
        Ok(Wire {
            r: BufReader::new(s),
        })
    }

    pub fn call(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.r.get_mut().write_all(&resp(args)).expect("send");
        let mut out = Vec::new();
        self.reply(&mut out);
        out
    }

    pub fn line(&mut self, out: &mut Vec<u8>) -> Vec<u8> {
        let start = out.len();
        self.r.read_until(b'\n', out).expect("read a reply line");
        assert!(out.ends_with(b"\r\n"), "truncated reply {out:?}");
        out[start + 1..out.len() - 2].to_vec()
    }

    /// Appends one complete reply (recursively for aggregates) to `out`: RESP2 and RESP3.
    pub fn reply(&mut self, out: &mut Vec<u8>) {
        let start = out.len();
        let rest = self.line(out);
        let n = || -> i64 { std::str::from_utf8(&rest).unwrap().parse().unwrap() };
        match out[start] {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
            b'$' | b'=' | b'!' if n() >= 0 => {
                let mut body = vec![0; n() as usize + 2];
                self.r.read_exact(&mut body).expect("read a bulk");
                out.extend_from_slice(&body);
            }
            b'*' | b'~' | b'>' | b'%' | b'|' if n() >= 0 => {
                let per = if matches!(out[start], b'%' | b'|') {
                    2
                } else {
                    1
                };
                for _ in 0..n() * per {
                    self.reply(out);
                }
            }
            b'$' | b'*' => {}
            t => panic!("unexpected reply type {:?}", t as char),
        }
    }
}

/// Splits a raw array, set or map reply into its elements' raw bytes (a map's keys and
/// values alternate); `None` if not one of those.
pub fn elements(raw: &[u8]) -> Option<Vec<Vec<u8>>> {
    if !matches!(raw.first(), Some(b'*' | b'~' | b'%')) || raw.starts_with(b"*-1") {
        return None;
    }
    let mut p = raw.iter().position(|&b| b == b'\n')? + 1;
    let mut out = Vec::new();
    while p < raw.len() {
        let end = element_end(raw, p)?;
        out.push(raw[p..end].to_vec());
        p = end;
    }
    Some(out)
}

fn element_end(raw: &[u8], p: usize) -> Option<usize> {
    let nl = p + raw[p..].iter().position(|&b| b == b'\n')? + 1;
    let n: i64 = std::str::from_utf8(&raw[p + 1..nl - 2])
        .ok()?
        .parse()
        .ok()?;
    match raw[p] {
        b'$' | b'=' if n >= 0 => Some(nl + n as usize + 2),
        b'*' | b'~' | b'%' if n >= 0 => {
            let per = if raw[p] == b'%' { 2 } else { 1 };
            let mut q = nl;
            for _ in 0..n * per {
                q = element_end(raw, q)?;
            }
            Some(q)
        }
        _ => Some(nl),
    }
}

/// How two replies to `cmd` may legitimately differ.
pub fn normalize(cmd: &str, args: &[String], raw: &[u8]) -> Vec<u8> {
    if let Some(v) = super::streams::normalize_stream(cmd, args, raw) {
        return v;
    }
    let sorted = |chunk: usize| -> Option<Vec<u8>> {
        let els = elements(raw)?;
        let mut groups: Vec<Vec<u8>> = els.chunks(chunk).map(|c| c.concat()).collect();
        groups.sort();
        let mut v = raw[..=raw.iter().position(|&b| b == b'\n')?].to_vec();
        v.extend(groups.concat());
        Some(v)
    };
    let out = match cmd {
        "SMEMBERS" | "SINTER" | "SUNION" | "SDIFF" | "KEYS" | "HKEYS" | "HVALS" => sorted(1),
        "HGETALL" => sorted(2),
        _ => None,
    };
    out.unwrap_or_else(|| raw.to_vec())
}

/// Whether two TTL replies agree within a second (both positive), or are equal.
pub fn ttl_close(a: &[u8], b: &[u8]) -> bool {
    let v = |r: &[u8]| -> Option<i64> {
        std::str::from_utf8(r.strip_prefix(b":")?.strip_suffix(b"\r\n")?)
            .ok()?
            .parse()
            .ok()
    };
    match (v(a), v(b)) {
        (Some(x), Some(y)) if x > 0 && y > 0 => (x - y).abs() <= 1,
        _ => a == b,
    }
}
