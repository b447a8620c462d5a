//! `strata compaction-service` (the CaaS-LSM control plane, or `status` of a running one) and
//! `strata compaction-worker` (a Compaction Service Agent). Each takes a TOML config file
//! (`--config`) whose keys the flags override; the token may also come from
//! `STRATA_COMPACTION_TOKEN`. Depends on `strata-compaction`; holds no logic of its own.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use strata::compaction::remote::FailureClass;
use strata_compaction::config::{self, ServiceConfig, WorkerConfig};
use strata_compaction::plane::{self, ControlPlane};
use strata_compaction::worker::{self, Injection, WorkerError, WorkerSetup};

/// Examples shown at the end of `strata compaction-service --help`.
pub const SERVICE_EXAMPLES: &str = "\
Examples:
  strata compaction-service --listen 127.0.0.1:7700 --token \"$TOKEN\"
  strata compaction-service --config service.toml --tls-cert cert.pem --tls-key key.pem
  strata compaction-service status --service http://127.0.0.1:7700 --token \"$TOKEN\"
  strata compaction-service bench --service http://127.0.0.1:7700 --token \"$TOKEN\" --jobs 10000";

/// Examples shown at the end of `strata compaction-worker --help`.
pub const WORKER_EXAMPLES: &str = "\
Examples:
  strata compaction-worker --service http://127.0.0.1:7700 --token \"$TOKEN\" \\
      --root /data --root s3://bucket/strata --scratch /data/.scratch --slots 2
  strata compaction-worker --config worker.toml --tls-ca ca.pem
  strata compaction-worker --service http://127.0.0.1:7700 --token \"$TOKEN\" \\
      --scratch /tmp/scratch --noop";

const STATUS_EXAMPLE: &str = "\
Example:
  strata compaction-service status --service http://127.0.0.1:7700 --token \"$TOKEN\"";

const BENCH_EXAMPLE: &str = "\
Example (with a worker started with --noop):
  strata compaction-service bench --service http://127.0.0.1:7700 --token \"$TOKEN\" \\
      --jobs 100000 --concurrency 256";

// The control plane of CaaS-LSM's compaction-as-a-service design.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ServiceArgs {
    #[command(subcommand)]
    cmd: Option<ServiceCmd>,
    /// A TOML file with the settings below (flags override it)
    #[arg(long)]
    config: Option<PathBuf>,
    /// Address to listen on, as host:port (required here or in the config file)
    #[arg(long, help_heading = "Network and security")]
    listen: Option<String>,
    /// The shared token every call must carry, at least 8 characters (or
    /// `STRATA_COMPACTION_TOKEN`)
    #[arg(
        long,
        env = "STRATA_COMPACTION_TOKEN",
        hide_env_values = true,
        help_heading = "Network and security"
    )]
    token: Option<String>,
    /// PEM certificate chain: serve TLS (with --tls-key)
    #[arg(long, help_heading = "Network and security")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert
    #[arg(long, help_heading = "Network and security")]
    tls_key: Option<PathBuf>,
    /// Milliseconds of silence after which a worker is lost and its jobs go elsewhere
    /// [default: 1500]
    #[arg(long)]
    worker_timeout_ms: Option<u64>,
    /// Log level (error, warn, info, debug, trace) or target list
    #[arg(long, default_value = "info")]
    log_level: String,
}

#[derive(Subcommand, Debug)]
enum ServiceCmd {
    /// Print a running compaction service's workers, job queue and counters, as JSON
    #[command(after_help = STATUS_EXAMPLE)]
    Status(StatusArgs),
    /// Measure a compaction service's throughput with no-op jobs; prints a JSON report
    ///
    /// Run the workers with --noop: they complete every job at once without reading it.
    #[command(after_help = BENCH_EXAMPLE)]
    Bench(BenchArgs),
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// The compaction service's URL (`http://host:port`)
    #[arg(long)]
    service: String,
    /// The service's token (or `STRATA_COMPACTION_TOKEN`)
    #[arg(long, env = "STRATA_COMPACTION_TOKEN", hide_env_values = true)]
    token: String,
    /// Jobs to run
    #[arg(long, default_value_t = 100_000)]
    jobs: u64,
    /// Jobs in flight (client loops)
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// HTTP/2 connections the loops share
    #[arg(long, default_value_t = 4)]
    connections: usize,
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// The compaction service's URL (`http://host:port`, `https://` with TLS)
    #[arg(long)]
    service: String,
    /// The service's token (or `STRATA_COMPACTION_TOKEN`)
    #[arg(long, env = "STRATA_COMPACTION_TOKEN", hide_env_values = true)]
    token: String,
    /// PEM CA certificate to trust for `https://`
    #[arg(long)]
    tls_ca: Option<PathBuf>,
}

// A Compaction Service Agent, in CaaS-LSM's terms.
#[derive(Args, Debug)]
pub struct WorkerArgs {
    /// A TOML file with the settings below (flags override it; --root adds to its roots)
    #[arg(long)]
    config: Option<PathBuf>,
    /// The compaction service's URL (`http://host:port`, `https://` with TLS); required
    #[arg(long, help_heading = "Connection")]
    service: Option<String>,
    /// The service's token (or `STRATA_COMPACTION_TOKEN`); required
    #[arg(
        long,
        env = "STRATA_COMPACTION_TOKEN",
        hide_env_values = true,
        help_heading = "Connection"
    )]
    token: Option<String>,
    /// Where outputs are staged until a job succeeds (cleared at start); required
    #[arg(long, help_heading = "Jobs")]
    scratch: Option<PathBuf>,
    /// A directory or capacity-tier URL prefix jobs may name (repeatable)
    #[arg(long = "root", help_heading = "Jobs")]
    roots: Vec<String>,
    /// Jobs run at once [default: 1]
    #[arg(long, help_heading = "Jobs")]
    slots: Option<u32>,
    /// Name shown in the service's status [default: the host name and process id]
    #[arg(long)]
    name: Option<String>,
    /// PEM CA certificate to trust for `https://`
    #[arg(long, help_heading = "Connection")]
    tls_ca: Option<PathBuf>,
    /// Server name to check in the service's certificate [default: the URL's host]
    #[arg(long, help_heading = "Connection")]
    tls_domain: Option<String>,
    /// Test hook: the first N jobs fail with CLASS (`retriable:N`, `solvable:N`, `fatal:N`).
    #[arg(long, hide = true)]
    inject_failure: Option<String>,
    /// Test hook: every job waits this long before it runs.
    #[arg(long, hide = true, default_value_t = 0)]
    inject_delay_ms: u64,
    /// Complete every job at once without running it (for `compaction-service bench`)
    #[arg(long, help_heading = "Jobs")]
    noop: bool,
    /// Log level (error, warn, info, debug, trace) or target list
    #[arg(long, default_value = "info")]
    log_level: String,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")
}

async fn ctrl_c() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

pub fn run_service(a: ServiceArgs) -> Result<()> {
    match a.cmd {
        Some(ServiceCmd::Status(s)) => return status(s),
        Some(ServiceCmd::Bench(b)) => {
            let r = runtime()?.block_on(strata_compaction::loadgen::run(
                &b.service,
                &b.token,
                b.jobs,
                b.concurrency,
                b.connections,
            ));
            let r = r.map_err(|e| anyhow!(e))?;
            println!("{}", serde_json::to_string_pretty(&r)?);
            return Ok(());
        }
        None => {}
    }
    crate::logging::init(&a.log_level)?;
    let mut c: ServiceConfig = match &a.config {
        Some(p) => config::load(p).map_err(|e| anyhow!(e))?,
        None => ServiceConfig::default(),
    };
    c.listen = a.listen.or(c.listen);
    c.token = a.token.or(c.token);
    c.tls_cert = a.tls_cert.or(c.tls_cert);
    c.tls_key = a.tls_key.or(c.tls_key);
    c.worker_timeout_ms = a.worker_timeout_ms.or(c.worker_timeout_ms);
    let listen = c
        .listen
        .clone()
        .context("--listen (or `listen` in the config) is required")?;
    let addr: std::net::SocketAddr = listen
        .parse()
        .with_context(|| format!("--listen {listen:?} is not host:port"))?;
    let token = c
        .token
        .clone()
        .context("--token (or STRATA_COMPACTION_TOKEN) is required")?;
    if token.len() < 8 {
        bail!("the token must be at least 8 characters");
    }
    let tls = match (&c.tls_cert, &c.tls_key) {
        (Some(cert), Some(key)) => Some(strata_compaction::tls::server(cert, key)?),
        (None, None) => None,
        _ => bail!("TLS needs both --tls-cert and --tls-key"),
    };
    let cp = ControlPlane::new(c.plane(), &token);
    runtime()?.block_on(async move {
        // Bind first so a taken port is an error here, not a log line.
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("listening on {addr}"))?;
        let local = listener.local_addr()?;
        drop(listener);
        tracing::info!(%local, tls = tls.is_some(), "compaction service listening");
        plane::serve(local, cp, tls, ctrl_c())
            .await
            .context("serving the compaction service")
    })
}

fn status(s: StatusArgs) -> Result<()> {
    use strata_compaction::proto::compaction_service_client::CompactionServiceClient;
    runtime()?.block_on(async move {
        let mut ep = tonic::transport::Endpoint::from_shared(s.service.clone())?;
        if let Some(ca) = &s.tls_ca {
            ep = ep.tls_config(strata_compaction::tls::client(ca, None)?)?;
        }
        let mut client = CompactionServiceClient::new(
            ep.connect()
                .await
                .with_context(|| format!("connecting to {}", s.service))?,
        );
        let mut req = tonic::Request::new(strata_compaction::proto::StatusRequest {});
        strata_compaction::auth::attach(&mut req, &s.token)
            .map_err(|e| anyhow!(e.message().to_string()))?;
        let r = client
            .status(req)
            .await
            .map_err(|e| anyhow!("status: {}", e.message()))?
            .into_inner();
        println!("{}", serde_json::to_string_pretty(&status_json(&r))?);
        Ok(())
    })
}

fn status_json(r: &strata_compaction::proto::StatusReply) -> serde_json::Value {
    use serde_json::json;
    let c = r.counters.unwrap_or_default();
    json!({
        "workers": r.workers.iter().map(|w| {
            let res = w.resources.unwrap_or_default();
            json!({
                "id": w.worker_id, "name": w.name, "slots": w.slots, "running": w.running,
                "cpu": res.cpu, "memory": res.memory, "memory_free_bytes": res.memory_free_bytes,
                "disk_free_bytes": res.disk_free_bytes, "net_rx_bytes_per_sec": res.net_rx_bytes_per_sec,
                "net_tx_bytes_per_sec": res.net_tx_bytes_per_sec,
                "last_heartbeat_ms_ago": w.last_heartbeat_ms_ago,
            })
        }).collect::<Vec<_>>(),
        "queue": r.queue.iter().map(|q| {
            let m = q.meta.clone().unwrap_or_default();
            json!({
                "job_id": q.job_id, "instance": m.instance, "reason": m.reason, "manual": m.manual,
                "input_levels": m.input_levels, "score": m.score, "input_bytes": m.input_bytes,
                "waiting_ms": q.waiting_ms, "attempt": q.attempt,
            })
        }).collect::<Vec<_>>(),
        "assigned": r.assigned,
        "instances": r.instances,
        "counters": {
            "submitted": c.submitted, "completed": c.completed, "use_local": c.use_local,
            "failed": c.failed, "retried": c.retried, "rescheduled": c.rescheduled,
            "workers_lost": c.workers_lost, "stale_completions": c.stale_completions,
            "cancelled": c.cancelled, "rejected_auth": c.rejected_auth,
            "queue_wait_micros": c.queue_wait_micros,
        },
    })
}

fn parse_injection(s: &str) -> Result<(FailureClass, u32)> {
    let (class, n) = s.split_once(':').unwrap_or((s, "1"));
    let class = match class {
        "retriable" => FailureClass::Retriable,
        "solvable" => FailureClass::Solvable,
        "fatal" => FailureClass::Fatal,
        o => bail!("unknown failure class {o:?}"),
    };
    Ok((class, n.parse().context("--inject-failure count")?))
}

/// Exit codes: 0 on a signal, 1 on a configuration error, 3 when the service refuses the token.
pub fn run_worker(a: WorkerArgs) -> ExitCode {
    let r = (|| -> Result<(WorkerSetup, String)> {
        let mut c: WorkerConfig = match &a.config {
            Some(p) => config::load(p).map_err(|e| anyhow!(e))?,
            None => WorkerConfig::default(),
        };
        c.roots.extend(a.roots.iter().cloned());
        let service = a
            .service
            .clone()
            .or(c.service)
            .context("--service is required")?;
        let token = a
            .token
            .clone()
            .or(c.token)
            .context("--token (or STRATA_COMPACTION_TOKEN) is required")?;
        let scratch = a
            .scratch
            .clone()
            .or(c.scratch)
            .context("--scratch is required")?;
        let tls_ca = a.tls_ca.clone().or(c.tls_ca);
        let tls_domain = a.tls_domain.clone().or(c.tls_domain);
        let tls = match &tls_ca {
            Some(ca) => Some(strata_compaction::tls::client(ca, tls_domain.as_deref())?),
            None => None,
        };
        let roots = c
            .roots
            .iter()
            .map(|r| {
                if r.contains("://") {
                    Ok(r.clone())
                } else {
                    std::path::absolute(r)
                        .map(|p| p.display().to_string())
                        .with_context(|| format!("root {r:?}"))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let name = a.name.clone().or(c.name).unwrap_or_else(|| {
            format!(
                "{}-{}",
                std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_else(|_| "worker".into()),
                std::process::id()
            )
        });
        let fail = a
            .inject_failure
            .as_deref()
            .map(parse_injection)
            .transpose()?;
        Ok((
            WorkerSetup {
                service,
                token,
                scratch,
                roots,
                slots: a.slots.or(c.slots).unwrap_or(1),
                name,
                tls,
                // The server's expiry filter, so `strata serve` databases compact remotely.
                filters: Some(std::sync::Arc::new(strata_server::expiry::filter_from_spec)),
                inject: Injection {
                    fail,
                    delay: std::time::Duration::from_millis(a.inject_delay_ms),
                    noop: a.noop,
                },
            },
            a.log_level.clone(),
        ))
    })();
    let (setup, level) = match r {
        Ok(x) => x,
        Err(e) => {
            eprintln!("strata: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = crate::logging::init(&level) {
        eprintln!("strata: {e:#}");
        return ExitCode::FAILURE;
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("strata: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(worker::run(setup, ctrl_c())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ WorkerError::Refused(_)) => {
            eprintln!("strata: {e}");
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("strata: {e}");
            ExitCode::FAILURE
        }
    }
}
