//! Connection buffers (see `connection`): an idle connection holds none, so requests that
//! arrive in pieces after idling, larger than the first read buffer, and pipelines far larger
//! than it, must all be served whole and in order.

mod common;

use std::time::Duration;

use common::{test_config, TestServer};

/// Idle connections hold no buffers (see `connection`): requests that arrive in pieces after
/// idling, larger than the first read buffer, and pipelines far larger than it, must all be
/// served whole and in order.
#[test]
fn requests_trickled_after_idling_are_served_whole() {
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(test_config(dir.path()));
    let mut raw = s.raw();
    let value = "v".repeat(200_000);
    let req = format!(
        "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n{value}\r\n",
        value.len()
    );
    for (i, piece) in req.as_bytes().chunks(3_000).enumerate() {
        raw.send(piece).unwrap();
        if i % 10 == 0 {
            std::thread::sleep(Duration::from_millis(20)); // the server goes idle in between
        }
    }
    let (got, _) = raw.read_at_least(5, Duration::from_secs(10));
    assert_eq!(got, b"+OK\r\n");
    std::thread::sleep(Duration::from_millis(50));
    raw.expect(b"STRLEN k\r\n", ":200000\r\n");
    // 2,000 pipelined requests in one write, then the same split at odd offsets.
    let mut pipe = Vec::new();
    let mut want = String::new();
    for i in 0..2_000 {
        pipe.extend_from_slice(
            format!("*2\r\n$4\r\nECHO\r\n${}\r\n{i}\r\n", i.to_string().len()).as_bytes(),
        );
        want.push_str(&format!("${}\r\n{i}\r\n", i.to_string().len()));
    }
    raw.expect(&pipe, &want);
    for piece in pipe.chunks(777) {
        raw.send(piece).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let (got, _) = raw.read_at_least(want.len(), Duration::from_secs(10));
    assert_eq!(String::from_utf8_lossy(&got), want);
}
