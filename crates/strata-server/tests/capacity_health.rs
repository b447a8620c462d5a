//! The capacity tier as an operator sees it, on the S3-compatible server the tests run on
//! (`STRATA_S3_URL`; SeaweedFS in CI) behind a TCP proxy this test controls:
//! - **Outage**: under a write load the proxy refuses every connection for 60 s. The log has
//!   the WARN (once, with the error and what is affected), `INFO` shows `capacity_tier_state:
//!   down` and the pending uploads, the recovery INFO follows once the store answers again,
//!   and every acknowledged write reads back.
//! - **Idle**: a server whose data reached the capacity tier, with no client, makes no
//!   object-store request for 5 minutes (`capacity_requests_total` stays put).
//!
//! Both run in this binary only: the proxy's address goes into `AWS_ENDPOINT_URL`, which the
//! capacity tier reads when it opens. Skipped (with a message) when `STRATA_S3_URL` is unset.

mod common;

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{test_config, TestServer};
use redis::Commands;

/// A TCP proxy to the S3 server that can refuse connections (its listener closed, open
/// connections cut) and accept them again on the same port.
struct Proxy {
    addr: SocketAddr,
    upstream: String,
    state: Mutex<ProxyState>,
}

struct ProxyState {
    /// Set to stop the current accept loop.
    stop: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: String) -> Arc<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = Arc::new(Proxy {
            addr: listener.local_addr().unwrap(),
            upstream,
            state: Mutex::new(ProxyState {
                stop: Arc::new(AtomicBool::new(false)),
                conns: Arc::new(Mutex::new(Vec::new())),
            }),
        });
        p.serve(listener);
        p
    }

    fn serve(&self, listener: TcpListener) {
        let st = self.state.lock().unwrap();
        let (stop, conns, upstream) = (st.stop.clone(), st.conns.clone(), self.upstream.clone());
        listener.set_nonblocking(true).unwrap();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(&upstream) else {
                            continue;
                        };
                        let mut list = conns.lock().unwrap();
                        if stop.load(Ordering::Acquire) {
                            // Refused while this one was being accepted: it must not live on
                            // through the outage.
                            let _ = client.shutdown(Shutdown::Both);
                            let _ = server.shutdown(Shutdown::Both);
                            continue;
                        }
                        list.push(client.try_clone().unwrap());
                        list.push(server.try_clone().unwrap());
                        for (mut from, mut to) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ] {
                            std::thread::spawn(move || {
                                let _ = std::io::copy(&mut from, &mut to);
                                let _ = to.shutdown(Shutdown::Write);
                            });
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            // The listener drops here: connecting is refused from now on.
        });
    }

    /// Refuses new connections and cuts the open ones (`stop` is set under the connection
    /// list's lock, so a connection being accepted is either in the list or sees `stop`).
    fn refuse(&self) {
        let st = self.state.lock().unwrap();
        let mut conns = st.conns.lock().unwrap();
        st.stop.store(true, Ordering::Release);
        for c in conns.drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Whether it refuses connections (between `refuse` and `accept_again`).
    fn refusing(&self) -> bool {
        self.state.lock().unwrap().stop.load(Ordering::Acquire)
    }

    /// Accepts connections again, on the same port.
    fn accept_again(&self) {
        std::thread::sleep(Duration::from_millis(50)); // the old loop sees `stop`
        let listener = TcpListener::bind(self.addr).expect("rebind the proxy's port");
        {
            let mut st = self.state.lock().unwrap();
            st.stop = Arc::new(AtomicBool::new(false));
        }
        self.serve(listener);
    }
}

/// The log lines of this binary (every server's), for the WARN and INFO checks.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl Write for Log {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Log {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

struct Env {
    proxy: Arc<Proxy>,
    /// Held while a test needs the store to answer (the idle test's loading) or refuses it
    /// (the outage), so that the two tests, run at once, do not trip each other.
    store: Mutex<()>,
    log: Log,
    /// `s3://bucket` (the proxy serves its server).
    s3_url: String,
}

/// Starts the proxy and the log capture once; `None` when no S3 server is configured.
fn env() -> Option<&'static Env> {
    static ENV: OnceLock<Option<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let s3_url = std::env::var("STRATA_S3_URL").ok()?;
        let endpoint = std::env::var("AWS_ENDPOINT_URL").ok()?;
        let upstream = endpoint
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let proxy = Proxy::start(upstream);
        // Before any capacity tier opens (this binary's tests all go through here).
        std::env::set_var("AWS_ENDPOINT_URL", format!("http://{}", proxy.addr));
        let log = Log::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .init();
        Some(Env {
            proxy,
            store: Mutex::new(()),
            log,
            s3_url: s3_url.trim_end_matches('/').to_string(),
        })
    })
    .as_ref()
}

fn info(c: &mut redis::Connection) -> std::collections::HashMap<String, String> {
    let text: String = redis::cmd("INFO").arg("strata").query(c).unwrap();
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

fn num(m: &std::collections::HashMap<String, String>, k: &str) -> u64 {
    m.get(k)
        .unwrap_or_else(|| panic!("INFO has no {k}"))
        .parse()
        .unwrap_or_else(|_| panic!("{k}: {}", m[k]))
}

/// A server whose bottom level lives on the S3 server, with small levels so that data
/// reaches it within seconds.
fn config(dir: &std::path::Path, env: &Env, name: &str) -> strata_server::ServerConfig {
    let mut c = test_config(dir);
    c.engine.capacity = format!("{}/{name}-{}", env.s3_url, std::process::id());
    c.engine.num_levels = 3;
    c.engine.capacity_levels = 1;
    c.engine.max_bytes_for_level_base = strata_server::ByteSize(1 << 20);
    c.engine.target_file_size_base = strata_server::ByteSize(256 << 10);
    c
}

fn value(i: u64) -> String {
    format!("{i:08}-").repeat(40)
}

/// Writes `keys` until the capacity tier holds tables.
fn load_until_on_capacity(c: &mut redis::Connection, keys: &mut u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        for _ in 0..500 {
            let _: () = c.set(format!("k{:08}", *keys), value(*keys)).unwrap();
            *keys += 1;
        }
        if num(&info(c), "capacity_tier_sst_bytes") > 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing reached the capacity tier"
        );
    }
}

#[test]
fn an_outage_is_reported_and_loses_nothing() {
    let Some(env) = env() else {
        eprintln!("an_outage_is_reported_and_loses_nothing: STRATA_S3_URL is not set; skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(config(dir.path(), env, "outage"));
    let mut c = s.conn();
    // A read of a key on the capacity tier during the outage fails once the engine's six
    // attempts failed (refused connections: seconds of backoff in all, object_store's own
    // retries being few and short). The client waits far longer than that on a loaded runner.
    c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut acked = 0u64;
    let _store = env.store.lock().unwrap_or_else(|e| e.into_inner());
    // However this test ends, the store answers again for the other test.
    struct AcceptAgain<'a>(&'a Proxy);
    impl Drop for AcceptAgain<'_> {
        fn drop(&mut self) {
            if self.0.refusing() {
                self.0.accept_again();
            }
        }
    }
    let _accept = AcceptAgain(&env.proxy);
    load_until_on_capacity(&mut c, &mut acked);
    let before = info(&mut c);
    assert_eq!(before["capacity_tier_state"], "up");
    assert!(num(&before, "capacity_requests_total") > 0);
    assert!(
        num(&before, "capacity_requests_put") + num(&before, "capacity_requests_multipart_part")
            > 0
    );

    // The store refuses every connection for 60 s, under writes (and reads of keys whose
    // tables are on it: an error or the right value, never a wrong one).
    env.proxy.refuse();
    let outage = Instant::now();
    let mut saw_down = None;
    while outage.elapsed() < Duration::from_secs(60) {
        for _ in 0..50 {
            let _: () = c.set(format!("k{acked:08}"), value(acked)).unwrap();
            acked += 1;
        }
        let probe = acked % 500;
        let asked = Instant::now();
        match c.get::<_, Option<String>>(format!("k{probe:08}")) {
            Ok(v) => assert_eq!(v, Some(value(probe)), "k{probe:08} during the outage"),
            // A read the store cannot serve is the engine's storage error, never a wrong value,
            // and it comes in seconds, not minutes (see `storage::object`'s retries).
            Err(e) => {
                assert!(
                    e.to_string().contains("storage error"),
                    "k{probe:08} during the outage: {e}"
                );
                assert!(
                    asked.elapsed() < Duration::from_secs(60),
                    "a failed read took {:?}",
                    asked.elapsed()
                );
            }
        }
        let i = info(&mut c);
        if i["capacity_tier_state"] == "down" && saw_down.is_none() {
            saw_down = Some(i);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let down = saw_down.expect("INFO never showed the capacity tier down during 60 s refused");
    assert!(num(&down, "capacity_failing_requests") > 0);
    assert_eq!(num(&down, "capacity_outages"), 1);
    let log = env.log.text();
    let warns = log.matches("object store unreachable").count();
    assert!(warns >= 1, "no WARN in the log:\n{log}");
    assert!(
        log.contains("outage-") || log.contains("strata-test"),
        "the WARN names the store"
    );

    // It answers again: the tier comes back up, with the recovery INFO.
    env.proxy.accept_again();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let i = info(&mut c);
        if i["capacity_tier_state"] == "up" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the tier never came back up: {i:?}"
        );
        // A read of an early key (on the capacity tier) is a request that can succeed.
        let _ = c.get::<_, Option<String>>("k00000000");
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = env.log.text();
    assert!(
        log.contains("object store answers again"),
        "no recovery INFO in the log:\n{log}"
    );
    // Every acknowledged write reads back, after a restart too.
    for i in 0..acked {
        let v: Option<String> = c.get(format!("k{i:08}")).unwrap();
        assert_eq!(v, Some(value(i)), "k{i:08}");
    }
    drop(c);
    s.stop();
    let s = TestServer::start(config(dir.path(), env, "outage"));
    let mut c = s.conn();
    for i in (0..acked).step_by(7) {
        let v: Option<String> = c.get(format!("k{i:08}")).unwrap();
        assert_eq!(v, Some(value(i)), "k{i:08} after a restart");
    }
    eprintln!(
        "outage: {acked} writes acknowledged, the tier down {}s in INFO with {} failing requests",
        down["capacity_tier_down_seconds"], down["capacity_failing_requests"]
    );
}

#[test]
fn an_idle_server_makes_no_object_store_request() {
    let Some(env) = env() else {
        eprintln!(
            "an_idle_server_makes_no_object_store_request: STRATA_S3_URL is not set; skipped"
        );
        return;
    };
    let idle = Duration::from_secs(
        std::env::var("STRATA_IDLE_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300),
    );
    let dir = tempfile::tempdir().unwrap();
    let s = TestServer::start(config(dir.path(), env, "idle"));
    let mut c = s.conn();
    let mut keys = 0;
    let store = env.store.lock().unwrap_or_else(|e| e.into_inner());
    load_until_on_capacity(&mut c, &mut keys);
    // Reads of keys on the capacity tier, so that its caches hold something too.
    for i in (0..keys).step_by(97) {
        let _: Option<String> = c.get(format!("k{i:08}")).unwrap();
    }
    s.shared().store.db().unwrap().flush().unwrap();
    s.shared()
        .store
        .db()
        .unwrap()
        .wait_for_compactions()
        .unwrap();
    // The compactions' inputs are deleted once garbage collection's minimum age (60 s) has
    // passed: that is the last work the store sees. Idle starts after it.
    let settled = Instant::now() + Duration::from_secs(180);
    while num(&info(&mut c), "capacity_gc_pending_tables") > 0 {
        assert!(
            Instant::now() < settled,
            "garbage collection never caught up"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let before = info(&mut c);
    drop((c, store));
    std::thread::sleep(idle);
    let mut c = s.conn();
    let after = info(&mut c);
    let (b, a) = (
        num(&before, "capacity_requests_total"),
        num(&after, "capacity_requests_total"),
    );
    let changed: Vec<String> = after
        .iter()
        .filter(|(k, _)| {
            k.starts_with("capacity_requests_") && k.as_str() != "capacity_requests_usd_per_month"
        })
        .filter(|(k, v)| before.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: {} -> {v}", before[k]))
        .collect();
    assert_eq!(
        a,
        b,
        "an idle server sent {} object-store requests in {idle:?}: {changed:?}",
        a - b
    );
    eprintln!("idle: {b} requests before, {a} after {idle:?}");
}
