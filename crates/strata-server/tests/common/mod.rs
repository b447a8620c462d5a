//! Helpers shared by the server's integration tests: an in-process server on an ephemeral
//! loopback port (its own runtime on its own thread), a raw TCP client for byte-level tests,
//! `redis` crate connections, and a seeded PRNG. Every wait here is bounded in time.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_server::{Server, ServerConfig, ServerError, Shared, ShutdownHandle};

pub mod blocked;
pub mod redis_server;
pub mod stream;

/// A server running on its own thread and runtime.
pub struct TestServer {
    pub addr: SocketAddr,
    pub dir: PathBuf,
    stop: ShutdownHandle,
    shared: Option<Arc<Shared>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

/// A configuration for tests: loopback, ephemeral port, small engine buffers.
pub fn test_config(dir: &Path) -> ServerConfig {
    let mut c = ServerConfig {
        port: 0,
        dir: dir.to_path_buf(),
        engine_threads: 8,
        ..Default::default()
    };
    c.engine.write_buffer_size = strata_server::ByteSize(1 << 20);
    c.engine.block_cache_size = strata_server::ByteSize(4 << 20);
    c
}

impl TestServer {
    pub fn start(config: ServerConfig) -> TestServer {
        assert!(config.bind == "127.0.0.1", "tests listen on loopback only");
        let dir = config.dir.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let server = match Server::bind(config, None).await {
                    Ok(s) => s,
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = tx.send(Err(msg));
                        return Err(e);
                    }
                };
                let _ = tx.send(Ok((
                    server.local_addr(),
                    server.shutdown_handle(),
                    server.shared().clone(),
                )));
                server.run().await
            })
        });
        let (addr, stop, shared) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server start timed out")
            .expect("server failed to start");
        TestServer {
            addr,
            dir,
            stop,
            shared: Some(shared),
            thread: Some(thread),
        }
    }

    /// The server's shared state (drop clones before `stop` so the database can close).
    pub fn shared(&self) -> &Arc<Shared> {
        self.shared.as_ref().expect("running")
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }

    pub fn conn(&self) -> redis::Connection {
        connect(&self.url())
    }

    pub fn conn3(&self) -> redis::Connection {
        connect(&format!("{}?protocol=resp3", self.url()))
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.addr)
    }

    /// Shuts down (as SIGTERM would) and waits for the engine to close.
    pub fn stop(mut self) {
        self.stop_inner().expect("clean shutdown");
    }

    /// [`TestServer::stop`], returning how the engine closed instead of requiring it clean.
    #[allow(dead_code)]
    pub fn stop_result(mut self) -> Result<(), ServerError> {
        self.stop_inner()
    }

    /// Waits until the server stopped by itself (e.g. after SHUTDOWN).
    pub fn wait_stopped(mut self) -> Result<(), ServerError> {
        self.shared = None;
        let t = self.thread.take().expect("running");
        let deadline = Instant::now() + Duration::from_secs(30);
        while !t.is_finished() {
            assert!(Instant::now() < deadline, "server did not stop");
            std::thread::sleep(Duration::from_millis(10));
        }
        t.join().expect("server thread panicked")
    }

    fn stop_inner(&mut self) -> Result<(), ServerError> {
        self.shared = None;
        self.stop.trigger();
        match self.thread.take() {
            Some(t) => t.join().expect("server thread panicked"),
            None => Ok(()),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

pub fn connect(url: &str) -> redis::Connection {
    let client = redis::Client::open(url).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match client.get_connection_with_timeout(Duration::from_secs(5)) {
            Ok(c) => {
                c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                return c;
            }
            Err(e) if Instant::now() < deadline => {
                eprintln!("connect retry: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("cannot connect: {e}"),
        }
    }
}

/// Runs a command, returning the raw reply value or the error text (`CODE detail`).
pub fn run(con: &mut redis::Connection, args: &[&str]) -> Result<redis::Value, String> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query::<redis::Value>(con).map_err(|e| err_text(&e))
}

/// SETs `{key_prefix}{i}` to `{value_prefix}{i}` for every `i` below `n`, one command each.
pub fn set_numbered(con: &mut redis::Connection, key_prefix: &str, value_prefix: &str, n: usize) {
    for i in 0..n {
        let (k, v) = (format!("{key_prefix}{i}"), format!("{value_prefix}{i}"));
        run(con, &["SET", &k, &v]).unwrap();
    }
}

/// `CODE detail` of a server error, as Redis would print it.
pub fn err_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(c), Some(d)) => format!("{c} {d}"),
        (Some(c), None) => c.to_string(),
        _ => format!("{e}"),
    }
}

/// A raw TCP connection for byte-level tests.
pub struct Raw {
    pub s: TcpStream,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        s.set_nodelay(true).unwrap();
        Raw { s }
    }

    pub fn send(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.s.write_all(b)
    }

    /// Reads until `want` bytes arrived, the peer closed, or `timeout` passed.
    pub fn read_at_least(&mut self, want: usize, timeout: Duration) -> (Vec<u8>, bool) {
        let deadline = Instant::now() + timeout;
        let mut out = Vec::new();
        let mut buf = [0u8; 65536];
        while out.len() < want && Instant::now() < deadline {
            match self.s.read(&mut buf) {
                Ok(0) => return (out, true),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return (out, true),
            }
        }
        (out, false)
    }

    /// Sends `req` and expects exactly `expect` back (within 10 s).
    pub fn expect(&mut self, req: &[u8], expect: &str) {
        self.send(req).unwrap();
        let (got, _) = self.read_at_least(expect.len(), Duration::from_secs(10));
        assert_eq!(
            String::from_utf8_lossy(&got),
            expect,
            "request {:?}",
            String::from_utf8_lossy(req)
        );
    }

    /// Whether the server closed the connection within `timeout` (reading and discarding).
    pub fn closed_within(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 4096];
        while Instant::now() < deadline {
            match self.s.read(&mut buf) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => return true,
            }
        }
        false
    }
}

/// Encodes a request as a RESP multibulk.
pub fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut v = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        v.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        v.extend_from_slice(a);
        v.extend_from_slice(b"\r\n");
    }
    v
}

// Not every test binary that includes this module uses them.
#[allow(unused_imports)]
pub use strata_test_support::{seed, Rng};
