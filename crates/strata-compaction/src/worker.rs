//! The compaction worker (a CaaS-LSM Compaction Service Agent, §4.2): registers with the
//! control plane, heartbeats its resources and running jobs, long-polls for assignments and
//! runs each on a blocking thread through `strata::compaction::remote::execute` (capacity-tier
//! inputs straight from the object store, fast-tier inputs through the shared roots, outputs
//! staged in the scratch directory until the job succeeds), then reports the result.
//!
//! Failure handling on this side: a job that fails reports its class (retriable, solvable,
//! fatal; §4.4); a job the control plane takes back (heartbeat `abort`, or a completion not
//! accepted) is cancelled and its outputs deleted; when the control plane forgets this worker
//! (it was declared lost, or restarted) every running job is aborted and the worker registers
//! again; when the control plane is unreachable the worker keeps retrying. A refused token
//! ends the worker with [`WorkerError::Refused`].

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata::compaction::remote::{self, FailureClass, RemoteJob, WorkerEnv};
use tokio::sync::Notify;
use tonic::transport::{Channel, Endpoint};
use tonic::{Code, Request};

use crate::auth;
use crate::proto::compaction_service_client::CompactionServiceClient;
use crate::proto::{self, complete_request};
use crate::resources::Sampler;

/// Test hooks: fail or slow down jobs on purpose.
#[derive(Clone, Debug, Default)]
pub struct Injection {
    /// The next `count` jobs fail with this class without running.
    pub fail: Option<(FailureClass, u32)>,
    /// Every job sleeps this long before it runs (so a test can kill the worker mid-job).
    pub delay: Duration,
    /// Complete every job at once with an empty result, without reading it (control-plane
    /// throughput measurements).
    pub noop: bool,
}

/// What a worker is started with.
pub struct WorkerSetup {
    pub service: String,
    pub token: String,
    pub scratch: PathBuf,
    pub roots: Vec<String>,
    pub slots: u32,
    pub name: String,
    pub tls: Option<tonic::transport::ClientTlsConfig>,
    /// Compaction filters beyond the engine's built-in ones, by name.
    pub filters: Option<Arc<remote::FilterFactory>>,
    pub inject: Injection,
}

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("the compaction service refused this worker: {0}")]
    Refused(String),
    #[error("worker configuration: {0}")]
    Config(String),
}

struct Running {
    cancel: Arc<AtomicBool>,
    started: Instant,
}

struct Shared {
    client: CompactionServiceClient<Channel>,
    token: String,
    env: Arc<WorkerEnv>,
    name: String,
    slots: u32,
    id: Mutex<String>,
    heartbeat: Mutex<Duration>,
    /// Attempts running, by (job, attempt).
    running: Mutex<HashMap<(u64, u32), Running>>,
    /// Serializes re-registration (the heartbeat and fetch tasks may both find the id stale).
    registering: tokio::sync::Mutex<()>,
    slot_freed: Notify,
    inject: Mutex<Injection>,
}

impl Shared {
    fn req<T>(&self, msg: T, timeout: Duration) -> Request<T> {
        let mut r = Request::new(msg);
        r.set_timeout(timeout);
        // The token was checked printable at start-up.
        let _ = auth::attach(&mut r, &self.token);
        r
    }

    /// Registers (again) unless another task already replaced `stale`.
    async fn register(
        &self,
        stale: Option<&str>,
        sampler: &Mutex<Sampler>,
    ) -> Result<(), WorkerError> {
        let _one_at_a_time = self.registering.lock().await;
        if let Some(s) = stale {
            if *self.id.lock() != s {
                return Ok(());
            }
            // Everything this worker was running now belongs to nobody (or to another worker).
            for r in self.running.lock().values() {
                r.cancel.store(true, Ordering::Relaxed);
            }
        }
        loop {
            let resources = sampler.lock().sample(self.env.scratch());
            let r = self.req(
                proto::RegisterRequest {
                    name: self.name.clone(),
                    slots: self.slots,
                    resources: Some(resources),
                },
                Duration::from_secs(5),
            );
            match self.client.clone().register(r).await {
                Ok(r) => {
                    let r = r.into_inner();
                    tracing::info!(worker = %r.worker_id, name = %self.name, "registered with the compaction service");
                    *self.heartbeat.lock() =
                        Duration::from_millis(r.heartbeat_ms.clamp(50, 10_000) as u64);
                    *self.id.lock() = r.worker_id;
                    return Ok(());
                }
                Err(e) if e.code() == Code::Unauthenticated => {
                    return Err(WorkerError::Refused(e.message().to_string()))
                }
                Err(e) => {
                    tracing::warn!(error = %e.message(), "compaction service unreachable; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }
}

/// Runs a worker until `shutdown` resolves or the service refuses it.
pub async fn run(
    setup: WorkerSetup,
    shutdown: impl Future<Output = ()>,
) -> Result<(), WorkerError> {
    if setup.roots.is_empty() {
        return Err(WorkerError::Config("at least one --root is needed".into()));
    }
    if auth::attach(&mut Request::new(()), &setup.token).is_err() {
        return Err(WorkerError::Config(
            "the token must be printable ASCII".into(),
        ));
    }
    let mut env = WorkerEnv::new(
        setup.roots.clone(),
        setup.scratch.clone(),
        strata::storage::default_storage(),
    )
    .map_err(|e| WorkerError::Config(e.to_string()))?;
    if let Some(f) = setup.filters {
        env = env.with_filters(f);
    }
    let mut ep = Endpoint::from_shared(setup.service.clone())
        .map_err(|e| WorkerError::Config(format!("service URL {:?}: {e}", setup.service)))?
        .connect_timeout(Duration::from_secs(1))
        .tcp_nodelay(true);
    if let Some(t) = setup.tls {
        ep = ep
            .tls_config(t)
            .map_err(|e| WorkerError::Config(e.to_string()))?;
    }
    let client = CompactionServiceClient::new(ep.connect_lazy())
        .max_decoding_message_size(remote::MAX_JOB_BYTES + 4096)
        .max_encoding_message_size(remote::MAX_JOB_BYTES + 4096);
    let shared = Arc::new(Shared {
        client,
        token: setup.token,
        env: Arc::new(env),
        name: setup.name,
        slots: setup.slots.max(1),
        id: Mutex::new(String::new()),
        heartbeat: Mutex::new(Duration::from_millis(500)),
        running: Mutex::new(HashMap::new()),
        registering: tokio::sync::Mutex::new(()),
        slot_freed: Notify::new(),
        inject: Mutex::new(setup.inject),
    });
    let sampler = Arc::new(Mutex::new(Sampler::new()));
    shared.register(None, &sampler).await?;
    let refused = Arc::new(Notify::new());
    let refusal: Arc<Mutex<Option<WorkerError>>> = Arc::default();
    let hb = tokio::spawn(heartbeats(
        shared.clone(),
        sampler.clone(),
        refused.clone(),
        refusal.clone(),
    ));
    let fetch = tokio::spawn(fetch_loop(
        shared.clone(),
        sampler,
        refused.clone(),
        refusal.clone(),
    ));
    tokio::select! {
        _ = shutdown => {}
        _ = refused.notified() => {}
    }
    hb.abort();
    fetch.abort();
    for r in shared.running.lock().values() {
        r.cancel.store(true, Ordering::Relaxed);
    }
    let refused = refusal.lock().take();
    match refused {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

async fn heartbeats(
    s: Arc<Shared>,
    sampler: Arc<Mutex<Sampler>>,
    refused: Arc<Notify>,
    refusal: Arc<Mutex<Option<WorkerError>>>,
) {
    loop {
        let every = *s.heartbeat.lock();
        tokio::time::sleep(every).await;
        let id = s.id.lock().clone();
        let running: Vec<proto::Progress> = s
            .running
            .lock()
            .iter()
            .map(|((job, attempt), r)| proto::Progress {
                job_id: *job,
                attempt: *attempt,
                elapsed_ms: r.started.elapsed().as_millis() as u64,
            })
            .collect();
        let resources = sampler.lock().sample(s.env.scratch());
        let r = s.req(
            proto::HeartbeatRequest {
                worker_id: id.clone(),
                resources: Some(resources),
                running,
            },
            every * 2,
        );
        match s.client.clone().heartbeat(r).await {
            Ok(r) => {
                let r = r.into_inner();
                for a in r.abort {
                    if let Some(run) = s.running.lock().get(&(a.job_id, a.attempt)) {
                        tracing::info!(
                            job = a.job_id,
                            attempt = a.attempt,
                            "control plane took the attempt back; aborting"
                        );
                        run.cancel.store(true, Ordering::Relaxed);
                    }
                }
                if r.unknown_worker {
                    tracing::warn!(worker = %id, "the control plane forgot this worker; registering again");
                    if let Err(e) = s.register(Some(&id), &sampler).await {
                        *refusal.lock() = Some(e);
                        refused.notify_one();
                        return;
                    }
                }
            }
            Err(e) if e.code() == Code::Unauthenticated => {
                *refusal.lock() = Some(WorkerError::Refused(e.message().to_string()));
                refused.notify_one();
                return;
            }
            Err(e) => tracing::warn!(error = %e.message(), "heartbeat failed"),
        }
    }
}

async fn fetch_loop(
    s: Arc<Shared>,
    sampler: Arc<Mutex<Sampler>>,
    refused: Arc<Notify>,
    refusal: Arc<Mutex<Option<WorkerError>>>,
) {
    loop {
        // Wait for a free slot.
        loop {
            let freed = s.slot_freed.notified();
            if s.running.lock().len() < s.slots as usize {
                break;
            }
            let _ = tokio::time::timeout(Duration::from_millis(500), freed).await;
        }
        let id = s.id.lock().clone();
        let r = s.req(
            proto::FetchRequest {
                worker_id: id.clone(),
                timeout_ms: 2000,
            },
            Duration::from_secs(5),
        );
        match s.client.clone().fetch(r).await {
            Ok(r) => {
                let r = r.into_inner();
                if r.unknown_worker {
                    if let Err(e) = s.register(Some(&id), &sampler).await {
                        *refusal.lock() = Some(e);
                        refused.notify_one();
                        return;
                    }
                    continue;
                }
                for a in r.jobs {
                    start_job(&s, id.clone(), a);
                }
            }
            Err(e) if e.code() == Code::Unauthenticated => {
                *refusal.lock() = Some(WorkerError::Refused(e.message().to_string()));
                refused.notify_one();
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e.message(), "fetch failed; retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

fn start_job(s: &Arc<Shared>, worker: String, a: proto::Assignment) {
    let cancel = Arc::new(AtomicBool::new(false));
    s.running.lock().insert(
        (a.job_id, a.attempt),
        Running {
            cancel: cancel.clone(),
            started: Instant::now(),
        },
    );
    let s = s.clone();
    if s.inject.lock().noop {
        tokio::spawn(async move {
            let outcome = complete_request::Outcome::Result(b"{}".to_vec());
            report(&s, &worker, a.job_id, a.attempt, outcome).await;
            s.running.lock().remove(&(a.job_id, a.attempt));
            s.slot_freed.notify_one();
        });
        return;
    }
    tokio::spawn(async move {
        let started = Instant::now();
        let (job_id, attempt) = (a.job_id, a.attempt);
        let inject = {
            let mut i = s.inject.lock();
            let fail = match &mut i.fail {
                Some((class, n)) if *n > 0 => {
                    *n -= 1;
                    Some(*class)
                }
                _ => None,
            };
            (fail, i.delay)
        };
        let env = s.env.clone();
        let c = cancel.clone();
        type Ran = (
            Option<RemoteJob>,
            Result<strata::compaction::CompactionResult, (FailureClass, String)>,
        );
        let classify = |e: strata::Error| (FailureClass::of(&e), e.to_string());
        let ran = tokio::task::spawn_blocking(move || -> Ran {
            if let Some(class) = inject.0 {
                return (
                    None,
                    Err((class, format!("injected {} failure", class.name()))),
                );
            }
            let deadline = Instant::now() + inject.1;
            while Instant::now() < deadline && !c.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let job = match RemoteJob::decode(&a.job) {
                Ok(j) => j,
                Err(e) => return (None, Err(classify(e))),
            };
            let r = remote::execute(&job, attempt, &format!("{job_id}-{attempt}"), &env, &c)
                .map_err(classify);
            (Some(job), r)
        })
        .await;
        let (job, result) = match ran {
            Ok(x) => x,
            Err(e) => (
                None,
                Err((FailureClass::Retriable, format!("worker thread: {e}"))),
            ),
        };
        let outcome = match &result {
            Ok(r) => complete_request::Outcome::Result(
                serde_json::to_vec(r).expect("a result always serializes"),
            ),
            Err((class, message)) => complete_request::Outcome::Failure(proto::Failure {
                class: wire_class(*class) as i32,
                message: message.clone(),
            }),
        };
        match &result {
            Ok(r) => {
                tracing::info!(job = job_id, attempt, took = ?started.elapsed(), outputs = r.outputs.len() + r.fast_outputs.len(), "compaction done")
            }
            Err((class, e)) => {
                tracing::warn!(job = job_id, attempt, class = class.name(), error = %e, "compaction failed")
            }
        }
        // Outputs are deleted only on a definite "not accepted": when the answer is unknown
        // the database may install them (and if it does not, it removes them itself).
        let accepted = report(&s, &worker, job_id, attempt, outcome).await;
        if let (Some(false), Some(job), Ok(r)) = (accepted, &job, &result) {
            tracing::info!(
                job = job_id,
                attempt,
                "result not accepted; deleting its outputs"
            );
            remote::discard(job, r, &s.env);
        }
        s.running.lock().remove(&(job_id, attempt));
        s.slot_freed.notify_one();
    });
}

fn wire_class(c: FailureClass) -> proto::FailureClass {
    match c {
        FailureClass::Retriable => proto::FailureClass::Retriable,
        FailureClass::Solvable => proto::FailureClass::Solvable,
        FailureClass::Fatal => proto::FailureClass::Fatal,
    }
}

/// Reports an attempt's outcome, retrying while the control plane is unreachable (up to a
/// minute). Returns whether it was accepted (`None`: no answer).
async fn report(
    s: &Shared,
    worker: &str,
    job_id: u64,
    attempt: u32,
    outcome: complete_request::Outcome,
) -> Option<bool> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = s.req(
            proto::CompleteRequest {
                worker_id: worker.to_string(),
                job_id,
                attempt,
                outcome: Some(outcome.clone()),
            },
            Duration::from_secs(5),
        );
        match s.client.clone().complete(r).await {
            Ok(r) => return Some(r.into_inner().accepted),
            Err(e) if Instant::now() < deadline && e.code() != Code::Unauthenticated => {
                tracing::warn!(job = job_id, error = %e.message(), "could not report; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(_) => return None,
        }
    }
}
