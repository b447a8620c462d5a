//! A real redis-server beside `strata serve`, for tests that compare the two (the differential
//! test, the blocking-order test). Loopback only; the child is killed on drop.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server child on a free loopback port, killed on drop.
pub struct RedisServer {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts one; `None` if redis-server is not on PATH.
    pub fn start() -> Option<RedisServer> {
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = match Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
                Err(e) => panic!("cannot start redis-server: {e}"),
            };
            let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
            let mut server = RedisServer {
                child,
                addr,
                _dir: tempfile::tempdir().unwrap(),
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break; // lost the port race: try another
                }
                if pong(addr) {
                    server._dir = dir;
                    return Some(server);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("redis-server did not start");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a server at `addr` answers PING.
fn pong(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

/// Starts redis-server, or says why the calling test is skipped: `None` without redis-server
/// on PATH — a failure instead when `STRATA_REQUIRE_REDIS_TOOLS=1` (the test command sets it).
pub fn redis_server_or_skip(test: &str) -> Option<RedisServer> {
    let r = RedisServer::start();
    if r.is_none() {
        if std::env::var("STRATA_REQUIRE_REDIS_TOOLS").as_deref() == Ok("1") {
            panic!("redis-server is required (STRATA_REQUIRE_REDIS_TOOLS=1) but not on PATH");
        }
        eprintln!("redis-server not on PATH: skipping {test}");
    }
    r
}
