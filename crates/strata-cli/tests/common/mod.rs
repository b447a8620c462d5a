//! Helpers for tests that run the `strata` binary as a separate process: start `strata serve`
//! on an ephemeral loopback port, find its address in the log, stop or kill it, and run
//! external tools with a time limit. Every wait is bounded.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `strata serve` process.
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Vec<String>>>,
    /// Copies stderr into `log`; joined once the process exits, so the log is complete.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl ServerProcess {
    /// Starts `strata serve --port 0 --dir <dir> <extra...>` and waits until it listens.
    pub fn start(dir: &Path, extra: &[&str]) -> ServerProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("serve")
            .args(["--bind", "127.0.0.1", "--port", "0", "--dir"])
            .arg(dir)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn strata serve");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let reader = {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(rest) = line.split("listening on ").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or("").to_string();
                        let _ = tx.send(addr);
                    }
                    log.lock().unwrap().push(line);
                }
            })
        };
        let addr = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(a) => a.parse().expect("address in the log"),
            Err(_) => {
                let _ = child.kill();
                panic!("server did not start: {:?}", log.lock().unwrap());
            }
        };
        ServerProcess {
            child,
            addr,
            log,
            reader: Some(reader),
        }
    }

    pub fn port(&self) -> String {
        self.addr.port().to_string()
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    pub fn conn(&self) -> redis::Connection {
        let c = redis::Client::open(self.url())
            .unwrap()
            .get_connection_with_timeout(Duration::from_secs(10))
            .expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c
    }

    /// Sends a signal with `kill(1)`.
    pub fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{sig} failed");
    }

    /// Waits for the process to exit.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                // The pipe closed with the process: the reader ends after the last line.
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("server did not exit: {:?}", self.log.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The path of an external tool, or `None` (then the test is skipped, unless
/// `STRATA_REQUIRE_REDIS_TOOLS=1`, which `scripts/test.sh` sets after installing them).
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("STRATA_REQUIRE_REDIS_TOOLS").as_deref() == Ok("1") {
            panic!("{name} is required (STRATA_REQUIRE_REDIS_TOOLS=1) but not on PATH");
        }
        eprintln!("SKIPPED: {name} not found (install redis-tools, or run scripts/test.sh)");
    }
    found
}

/// Runs a command with `stdin` as input, killing it after `timeout`.
pub fn run_with_timeout(cmd: &mut Command, stdin: &[u8], timeout: Duration) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tool");
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let (tx, rx) = mpsc::channel();
    let pid = child.id();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(timeout).is_err() {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        panic!("{cmd:?} did not finish within {timeout:?}");
    }
    let _ = writer.join();
    waiter.join().unwrap().expect("tool output")
}

// Not every test binary that includes this module uses them.
#[allow(unused_imports)]
pub use strata_test_support::{seed, Rng};
