//! The control plane's gRPC service: each call checks the token, locks the [`Plane`], calls
//! it, runs the distributor (`dispatch`) and wakes the workers and waiters it concerns.
//! `Wait` and `Fetch` are long polls on per-job and per-worker notifications. A monitor task
//! declares silent workers lost every `heartbeat / 5`.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use super::state::{Plane, PlaneConfig};
use crate::auth;
use crate::proto::compaction_service_server::{CompactionService as Api, CompactionServiceServer};
use crate::proto::*;

/// Longest long poll a client may ask for.
const MAX_POLL: Duration = Duration::from_secs(30);

/// The service over a shared [`Plane`].
#[derive(Clone)]
pub struct ControlPlane {
    plane: Arc<Mutex<Plane>>,
    token: Arc<str>,
}

impl ControlPlane {
    pub fn new(cfg: PlaneConfig, token: &str) -> Self {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        ControlPlane {
            plane: Arc::new(Mutex::new(Plane::new(cfg, epoch))),
            token: token.into(),
        }
    }

    pub fn plane(&self) -> &Arc<Mutex<Plane>> {
        &self.plane
    }

    fn auth<T>(&self, req: &Request<T>) -> Result<(), Status> {
        auth::check(req, &self.token).inspect_err(|_| {
            tracing::warn!(remote = ?req.remote_addr(), "compaction service: rejected a call without the right token");
            self.plane.lock().note_rejected_auth();
        })
    }

    /// Runs the distributor and wakes the workers that got jobs.
    fn dispatch(&self, plane: &mut Plane) {
        for n in plane.dispatch(Instant::now()) {
            n.notify_waiters();
        }
    }

    /// Monitor and distributor ticks until the process ends.
    pub fn start_monitor(&self) -> tokio::task::JoinHandle<()> {
        let this = self.clone();
        let tick = this.plane.lock().config().heartbeat / 5;
        tokio::spawn(async move {
            let mut t = tokio::time::interval(tick.max(Duration::from_millis(20)));
            loop {
                t.tick().await;
                let mut p = this.plane.lock();
                p.monitor(Instant::now());
                this.dispatch(&mut p);
            }
        })
    }
}

/// Waits for `n` (already enabled) at most `d`.
async fn wait_for(n: Arc<Notify>, d: Duration, check: impl Fn() -> bool) {
    let fut = n.notified();
    tokio::pin!(fut);
    fut.as_mut().enable();
    if check() {
        return;
    }
    let _ = tokio::time::timeout(d, fut).await;
}

fn poll_timeout(ms: u32) -> Duration {
    Duration::from_millis(ms as u64).min(MAX_POLL)
}

#[tonic::async_trait]
impl Api for ControlPlane {
    async fn submit(&self, req: Request<SubmitRequest>) -> Result<Response<SubmitReply>, Status> {
        self.auth(&req)?;
        let r = req.into_inner();
        let meta = r
            .meta
            .ok_or_else(|| Status::invalid_argument("a job needs its control metadata"))?;
        if r.job.len() > strata::compaction::remote::MAX_JOB_BYTES {
            return Err(Status::invalid_argument("job description too large"));
        }
        if meta.instance.is_empty() || meta.instance.len() > 4096 {
            return Err(Status::invalid_argument("a job needs its instance's name"));
        }
        let mut p = self.plane.lock();
        let answer = match p.submit(meta, r.job, Instant::now()) {
            Ok(id) => submit_reply::Answer::JobId(id),
            Err(why) => submit_reply::Answer::UseLocal(why),
        };
        self.dispatch(&mut p);
        Ok(Response::new(SubmitReply {
            answer: Some(answer),
        }))
    }

    async fn wait(&self, req: Request<WaitRequest>) -> Result<Response<WaitReply>, Status> {
        self.auth(&req)?;
        let r = req.into_inner();
        let deadline = Instant::now() + poll_timeout(r.timeout_ms);
        loop {
            let (reply, notify) = self.plane.lock().poll(r.job_id);
            let Some(n) = notify else {
                return Ok(Response::new(reply));
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(Response::new(reply));
            }
            let plane = self.plane.clone();
            wait_for(n, left, move || plane.lock().poll(r.job_id).1.is_none()).await;
        }
    }

    async fn cancel(&self, req: Request<CancelRequest>) -> Result<Response<CancelReply>, Status> {
        self.auth(&req)?;
        let mut p = self.plane.lock();
        p.cancel(req.into_inner().job_id);
        self.dispatch(&mut p);
        Ok(Response::new(CancelReply {}))
    }

    async fn register(
        &self,
        req: Request<RegisterRequest>,
    ) -> Result<Response<RegisterReply>, Status> {
        self.auth(&req)?;
        let r = req.into_inner();
        let mut p = self.plane.lock();
        let id = p.register(
            r.name,
            r.slots.clamp(1, 1024),
            r.resources.unwrap_or_default(),
            Instant::now(),
        );
        let hb = p.config().heartbeat.as_millis() as u32;
        self.dispatch(&mut p);
        Ok(Response::new(RegisterReply {
            worker_id: id,
            heartbeat_ms: hb,
        }))
    }

    async fn heartbeat(
        &self,
        req: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatReply>, Status> {
        self.auth(&req)?;
        let r = req.into_inner();
        let running: Vec<(u64, u32)> = r.running.iter().map(|p| (p.job_id, p.attempt)).collect();
        let mut p = self.plane.lock();
        let reply = match p.heartbeat(
            &r.worker_id,
            r.resources.unwrap_or_default(),
            &running,
            Instant::now(),
        ) {
            Some(abort) => HeartbeatReply {
                abort: abort
                    .into_iter()
                    .map(|(job_id, attempt)| Progress {
                        job_id,
                        attempt,
                        elapsed_ms: 0,
                    })
                    .collect(),
                unknown_worker: false,
            },
            None => HeartbeatReply {
                abort: Vec::new(),
                unknown_worker: true,
            },
        };
        self.dispatch(&mut p);
        Ok(Response::new(reply))
    }

    async fn fetch(&self, req: Request<FetchRequest>) -> Result<Response<FetchReply>, Status> {
        self.auth(&req)?;
        let r = req.into_inner();
        let deadline = Instant::now() + poll_timeout(r.timeout_ms);
        loop {
            let got = self.plane.lock().fetch(&r.worker_id, Instant::now());
            let Some((jobs, notify)) = got else {
                return Ok(Response::new(FetchReply {
                    jobs: Vec::new(),
                    unknown_worker: true,
                }));
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if !jobs.is_empty() || left.is_zero() {
                return Ok(Response::new(FetchReply {
                    jobs,
                    unknown_worker: false,
                }));
            }
            let (plane, wid) = (self.plane.clone(), r.worker_id.clone());
            wait_for(notify, left, move || plane.lock().has_assignments(&wid)).await;
        }
    }

    async fn complete(
        &self,
        req: Request<CompleteRequest>,
    ) -> Result<Response<CompleteReply>, Status> {
        self.auth(&req)?;
        let r = req.into_inner();
        let outcome = r
            .outcome
            .ok_or_else(|| Status::invalid_argument("a completion needs an outcome"))?;
        let mut p = self.plane.lock();
        let accepted = p.complete(&r.worker_id, r.job_id, r.attempt, outcome, Instant::now());
        self.dispatch(&mut p);
        Ok(Response::new(CompleteReply { accepted }))
    }

    async fn status(&self, req: Request<StatusRequest>) -> Result<Response<StatusReply>, Status> {
        self.auth(&req)?;
        Ok(Response::new(self.plane.lock().status(Instant::now())))
    }
}

/// Serves the control plane on `addr` until `shutdown` resolves.
pub async fn serve(
    addr: SocketAddr,
    plane: ControlPlane,
    tls: Option<tonic::transport::ServerTlsConfig>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error> {
    let monitor = plane.start_monitor();
    let mut b = tonic::transport::Server::builder()
        .tcp_nodelay(true)
        .http2_keepalive_interval(Some(Duration::from_secs(10)));
    if let Some(t) = tls {
        b = b.tls_config(t)?;
    }
    let svc = CompactionServiceServer::new(plane)
        .max_decoding_message_size(strata::compaction::remote::MAX_JOB_BYTES + 4096)
        .max_encoding_message_size(strata::compaction::remote::MAX_JOB_BYTES + 4096);
    let r = b.add_service(svc).serve_with_shutdown(addr, shutdown).await;
    monitor.abort();
    r
}
