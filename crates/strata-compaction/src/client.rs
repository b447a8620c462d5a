//! The engine's client: [`RemoteService`] implements
//! [`strata::compaction::remote::CompactionService`] over gRPC, on a small runtime of its own
//! (the engine calls it from its background threads).
//!
//! Service-level failures (CaaS-LSM §4.4): the channel connects lazily and reconnects by
//! itself; a call that cannot reach the control plane fails fast, and for the next
//! `retry_after` every `start` fails without trying, so each job falls back to local
//! compaction at once; after that the next job tries again, and remote use resumes when the
//! control plane is back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use strata::compaction::remote::{
    Absorbed, CompactionService, FailureClass, Outcome, RemoteJob, Started,
};
use strata::compaction::CompactionResult;
use tonic::transport::{Channel, Endpoint};
use tonic::Request;

use crate::auth;
use crate::proto::compaction_service_client::CompactionServiceClient;
use crate::proto::{self, submit_reply, JobState};

/// A control plane, as the engine sees it.
pub struct RemoteService {
    /// Always `Some` until dropped (then shut down without blocking: the last reference may
    /// be dropped inside another runtime).
    rt: Option<tokio::runtime::Runtime>,
    client: CompactionServiceClient<Channel>,
    token: String,
    url: String,
    down_until: Mutex<Option<Instant>>,
    retry_after: Duration,
    rpc_timeout: Duration,
}

fn unreachable(url: &str, e: impl std::fmt::Display) -> strata::Error {
    strata::Error::external(format!("compaction service {url}"), e.to_string())
}

impl RemoteService {
    /// A client of the control plane at `url` (`http://host:port`, or `https://` with `tls`).
    /// Does not connect yet: an unreachable service is found by the first job.
    pub fn connect(
        url: &str,
        token: &str,
        tls: Option<tonic::transport::ClientTlsConfig>,
    ) -> strata::Result<Arc<Self>> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("strata-caas-client")
            .enable_all()
            .build()
            .map_err(|e| unreachable(url, e))?;
        let mut ep = Endpoint::from_shared(url.to_string())
            .map_err(|e| {
                strata::Error::invalid_argument(format!("compaction service URL {url:?}: {e}"))
            })?
            .connect_timeout(Duration::from_secs(1))
            .tcp_nodelay(true);
        if let Some(t) = tls {
            ep = ep.tls_config(t).map_err(|e| unreachable(url, e))?;
        }
        let channel = {
            let _g = rt.enter();
            ep.connect_lazy()
        };
        Ok(Arc::new(RemoteService {
            rt: Some(rt),
            client: CompactionServiceClient::new(channel)
                .max_decoding_message_size(strata::compaction::remote::MAX_JOB_BYTES + 4096)
                .max_encoding_message_size(strata::compaction::remote::MAX_JOB_BYTES + 4096),
            token: token.to_string(),
            url: url.to_string(),
            down_until: Mutex::new(None),
            retry_after: Duration::from_secs(1),
            rpc_timeout: Duration::from_secs(5),
        }))
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().expect("present until dropped").block_on(f)
    }

    fn request<T>(&self, msg: T, timeout: Duration) -> strata::Result<Request<T>> {
        let mut r = Request::new(msg);
        r.set_timeout(timeout);
        auth::attach(&mut r, &self.token).map_err(|e| unreachable(&self.url, e.message()))?;
        Ok(r)
    }

    fn note_down(&self, e: &tonic::Status) {
        if e.code() == tonic::Code::Unauthenticated {
            tracing::error!(url = %self.url, "the compaction service refused this database's token");
        }
        *self.down_until.lock() = Some(Instant::now() + self.retry_after);
    }
}

impl Drop for RemoteService {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// The engine's control metadata, on the wire.
pub fn wire_meta(m: &strata::compaction::remote::ControlMetadata) -> proto::ControlMetadata {
    proto::ControlMetadata {
        instance: m.instance.clone(),
        reason: format!("{:?}", m.reason),
        manual: m.manual(),
        input_levels: m.input_levels.clone(),
        output_level: m.output_level,
        score: m.score,
        input_bytes: m.input_bytes,
        input_files: m.input_files,
        priority: 0,
        wait_for_worker: m.wait_for_worker,
    }
}

fn class_of(c: i32) -> FailureClass {
    match proto::FailureClass::try_from(c) {
        Ok(proto::FailureClass::Retriable) => FailureClass::Retriable,
        Ok(proto::FailureClass::Solvable) => FailureClass::Solvable,
        _ => FailureClass::Fatal,
    }
}

/// A `WaitReply` as the engine's outcome.
pub fn outcome_of(r: proto::WaitReply) -> Outcome {
    match JobState::try_from(r.state).unwrap_or(JobState::Unknown) {
        JobState::Pending => Outcome::Pending,
        JobState::Done => match serde_json::from_slice::<CompactionResult>(&r.result) {
            Ok(result) => Outcome::Done {
                result,
                attempt: r.attempt,
                worker: r.worker,
                queue_wait: Duration::from_micros(r.queue_wait_micros),
                absorbed: Absorbed {
                    retriable: r.retriable,
                    solvable: r.solvable,
                    workers_lost: r.workers_lost,
                },
            },
            Err(e) => Outcome::Failed {
                class: FailureClass::Fatal,
                message: format!("undecodable result from {}: {e}", r.worker),
            },
        },
        JobState::UseLocal => Outcome::UseLocal(r.message),
        JobState::Failed => Outcome::Failed {
            class: class_of(r.failure),
            message: r.message,
        },
        JobState::Unknown => {
            Outcome::UseLocal(format!("the control plane lost the job: {}", r.message))
        }
    }
}

impl CompactionService for RemoteService {
    fn start(&self, job: &RemoteJob) -> strata::Result<Started> {
        if self.down_until.lock().is_some_and(|t| Instant::now() < t) {
            return Err(unreachable(&self.url, "down (retrying shortly)"));
        }
        let req = self.request(
            proto::SubmitRequest {
                meta: Some(wire_meta(&job.meta)),
                job: job.encode(),
            },
            self.rpc_timeout,
        )?;
        let mut c = self.client.clone();
        match self.block_on(c.submit(req)) {
            Ok(r) => {
                *self.down_until.lock() = None;
                match r.into_inner().answer {
                    Some(submit_reply::Answer::JobId(id)) => Ok(Started::Queued(id)),
                    Some(submit_reply::Answer::UseLocal(why)) => Ok(Started::UseLocal(why)),
                    None => Ok(Started::UseLocal("empty answer".into())),
                }
            }
            Err(e) => {
                self.note_down(&e);
                Err(unreachable(&self.url, e.message()))
            }
        }
    }

    fn wait(&self, id: u64, timeout: Duration) -> strata::Result<Outcome> {
        let req = self.request(
            proto::WaitRequest {
                job_id: id,
                timeout_ms: timeout.as_millis() as u32,
            },
            timeout + self.rpc_timeout,
        )?;
        let mut c = self.client.clone();
        match self.block_on(c.wait(req)) {
            Ok(r) => Ok(outcome_of(r.into_inner())),
            Err(e) => {
                // Back off a little, so a dead control plane is not spun on.
                std::thread::sleep(Duration::from_millis(50));
                Err(unreachable(&self.url, e.message()))
            }
        }
    }

    fn cancel(&self, id: u64) {
        if let Ok(req) = self.request(proto::CancelRequest { job_id: id }, Duration::from_secs(1)) {
            let mut c = self.client.clone();
            let _ = self.block_on(c.cancel(req));
        }
    }

    fn name(&self) -> &str {
        &self.url
    }
}

#[cfg(test)]
mod tests {
    use strata::compaction::remote::ControlMetadata;
    use strata::compaction::CompactionReason;

    #[test]
    fn control_metadata_crosses_the_wire_whole() {
        for wait_for_worker in [false, true] {
            let m = ControlMetadata {
                instance: "db-1".into(),
                reason: CompactionReason::Manual,
                input_levels: vec![5, 6],
                output_level: 6,
                score: 1.5,
                input_bytes: 3 << 20,
                input_files: 3,
                wait_for_worker,
            };
            let w = super::wire_meta(&m);
            assert_eq!(
                (w.instance.as_str(), w.reason.as_str(), w.manual),
                ("db-1", "Manual", true)
            );
            assert_eq!((w.input_levels, w.output_level), (vec![5, 6], 6));
            assert_eq!((w.score, w.input_bytes, w.input_files), (1.5, 3 << 20, 3));
            assert_eq!(w.wait_for_worker, wait_for_worker);
        }
    }
}
