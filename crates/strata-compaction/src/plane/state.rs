//! The control plane's state (CaaS-LSM §4.3–4.4): the Monitor's worker registry, the
//! Scheduler's priority queue, the Distributor's per-worker outboxes, and failure handling.
//! Synchronous and clock-free (every call takes `now`), so the RPC layer only locks, calls
//! and wakes; tests drive it directly.
//!
//! Job lifecycle: `Queued` → `Assigned(worker, attempt)` → `Finished(reply)`, kept for
//! `result_retention` so a repeated `Wait` gets the same answer, then forgotten. Every
//! assignment takes a fresh attempt number (the engine reserves table numbers per attempt),
//! and only the current assignment's completion is accepted: a completion from a worker the
//! job was taken from (lost, cancelled) is answered "not accepted" and the worker discards
//! its outputs. So a job is finished at most once and, while the control plane lives, always
//! finished (done, failed, or "use local").

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::compaction::remote::MAX_ATTEMPTS;
use tokio::sync::Notify;

use super::queue::{self, PriorityHook, PriorityKey};
use super::select::{self, Choice, WorkerView};
use crate::proto::{
    complete_request, Assignment, ControlMetadata, Counters, FailureClass, JobState, QueuedJob,
    Resources, StatusReply, WaitReply, WorkerStatus,
};

/// Control-plane tuning.
#[derive(Clone)]
pub struct PlaneConfig {
    /// The heartbeat interval workers are told to keep.
    pub heartbeat: Duration,
    /// A worker silent this long is lost; its jobs go to other workers.
    pub worker_timeout: Duration,
    /// Retriable failures retried on the same worker before another is tried.
    pub same_worker_retries: u32,
    /// How long a finished job's answer is kept for `Wait`.
    pub result_retention: Duration,
    /// Jobs queued at most; beyond it, "use local".
    pub max_queue: usize,
    pub priority: PriorityHook,
}

impl Default for PlaneConfig {
    fn default() -> Self {
        PlaneConfig {
            heartbeat: Duration::from_millis(500),
            worker_timeout: Duration::from_millis(1500),
            same_worker_retries: 1,
            result_retention: Duration::from_secs(60),
            max_queue: 100_000,
            priority: queue::metadata_priority(),
        }
    }
}

enum State {
    Queued {
        key: PriorityKey,
        since: Instant,
    },
    Assigned {
        worker: String,
        attempt: u32,
        at: Instant,
    },
    Finished {
        reply: WaitReply,
        at: Instant,
    },
}

struct Job {
    meta: ControlMetadata,
    body: Arc<Vec<u8>>,
    state: State,
    /// The next attempt number.
    attempt: u32,
    rescheduled: bool,
    excluded: Vec<String>,
    preferred: Option<String>,
    same_worker_retries: u32,
    retriable: u32,
    solvable: u32,
    workers_lost: u32,
    queue_wait: Duration,
    notify: Arc<Notify>,
}

struct Worker {
    name: String,
    slots: u32,
    resources: Resources,
    /// Jobs it was running when `resources` was sampled.
    jobs_at_report: u32,
    last_seen: Instant,
    running: BTreeSet<u64>,
    outbox: Vec<Assignment>,
    /// Attempts to abort, told in the next heartbeat reply.
    abort: Vec<(u64, u32)>,
    notify: Arc<Notify>,
}

/// A worker's CPU use now: the reported use, less the share of the jobs that finished since
/// the report (a worker whose only job just ended is not "above 80%" for the next one).
fn current_cpu(w: &Worker) -> f64 {
    let (then, now) = (w.jobs_at_report as f64, w.running.len() as f64);
    if then > 0.0 && now < then {
        w.resources.cpu * now / then
    } else {
        w.resources.cpu
    }
}

/// See the module docs.
pub struct Plane {
    cfg: PlaneConfig,
    jobs: HashMap<u64, Job>,
    queue: BTreeMap<PriorityKey, u64>,
    workers: BTreeMap<String, Worker>,
    next_job: u64,
    next_worker: u64,
    counters: Counters,
    instances: HashSet<String>,
    /// Distinguishes this run's worker ids from a previous run's.
    epoch: u64,
}

/// What a failed attempt reported.
pub struct Failure {
    pub class: FailureClass,
    pub message: String,
}

impl Plane {
    pub fn new(cfg: PlaneConfig, epoch: u64) -> Self {
        Plane {
            cfg,
            jobs: HashMap::new(),
            queue: BTreeMap::new(),
            workers: BTreeMap::new(),
            // Ids from another run of the control plane never repeat (a database still waiting
            // on an old id gets UNKNOWN, not someone else's job).
            next_job: (epoch << 20).max(1),
            next_worker: 1,
            counters: Counters::default(),
            instances: HashSet::new(),
            epoch,
        }
    }

    pub fn config(&self) -> &PlaneConfig {
        &self.cfg
    }

    pub fn note_rejected_auth(&mut self) {
        self.counters.rejected_auth += 1;
    }

    /// Queues a job; `Err(reason)`: run it locally.
    pub fn submit(
        &mut self,
        meta: ControlMetadata,
        body: Vec<u8>,
        now: Instant,
    ) -> Result<u64, String> {
        self.counters.submitted += 1;
        self.instances.insert(meta.instance.clone());
        if self.workers.is_empty() {
            self.counters.use_local += 1;
            return Err("no compaction workers are registered".into());
        }
        if self.queue.len() >= self.cfg.max_queue {
            self.counters.use_local += 1;
            return Err(format!("{} jobs are queued already", self.queue.len()));
        }
        let id = self.next_job;
        self.next_job += 1;
        // Ids increase within a run: they are the submission order.
        let key = queue::key(&meta, false, (self.cfg.priority)(&meta), id);
        self.queue.insert(key, id);
        self.jobs.insert(
            id,
            Job {
                meta,
                body: Arc::new(body),
                state: State::Queued { key, since: now },
                attempt: 0,
                rescheduled: false,
                excluded: Vec::new(),
                preferred: None,
                same_worker_retries: 0,
                retriable: 0,
                solvable: 0,
                workers_lost: 0,
                queue_wait: Duration::ZERO,
                notify: Arc::new(Notify::new()),
            },
        );
        Ok(id)
    }

    /// Assigns queued jobs to workers in priority order while workers have room; answers
    /// "use local" to jobs no worker can take. Returns the workers that got jobs.
    pub fn dispatch(&mut self, now: Instant) -> Vec<Arc<Notify>> {
        let mut woken = Vec::new();
        if self.queue.is_empty() {
            return woken;
        }
        let mut views: Vec<WorkerView> = self
            .workers
            .iter()
            .map(|(id, w)| WorkerView {
                id: id.clone(),
                cpu: current_cpu(w),
                memory: w.resources.memory,
                memory_free: w.resources.memory_free_bytes,
                disk_free: w.resources.disk_free_bytes,
                slots: w.slots,
                running: w.running.len() as u32,
            })
            .collect();
        let mut cursor: Option<PriorityKey> = None;
        loop {
            // Nothing more can start while every worker is full (an empty registry answers
            // every job "use local" below).
            if !views.is_empty() && views.iter().all(|v| v.running >= v.slots) {
                break;
            }
            let next = match cursor {
                None => self.queue.iter().next(),
                Some(c) => self
                    .queue
                    .range((std::ops::Bound::Excluded(c), std::ops::Bound::Unbounded))
                    .next(),
            };
            let Some((&key, &id)) = next else {
                break;
            };
            cursor = Some(key);
            let job = self.jobs.get(&id).expect("queued jobs exist");
            let choice = select::choose(
                &views,
                select::need_of(&job.meta),
                &job.excluded,
                job.preferred.as_deref(),
            );
            match choice {
                Choice::Busy => continue,
                Choice::LackOfResources(why) => {
                    self.queue.remove(&key);
                    self.counters.use_local += 1;
                    self.finish(id, now, |r| {
                        r.state = JobState::UseLocal as i32;
                        r.message = why;
                    });
                }
                Choice::Worker(i) => {
                    self.queue.remove(&key);
                    let wid = views[i].id.clone();
                    let job = self.jobs.get_mut(&id).expect("queued jobs exist");
                    if job.attempt >= MAX_ATTEMPTS {
                        self.exhausted(id, now);
                        continue;
                    }
                    let attempt = job.attempt;
                    job.attempt += 1;
                    if let State::Queued { since, .. } = job.state {
                        let waited = now.saturating_duration_since(since);
                        job.queue_wait += waited;
                        self.counters.queue_wait_micros += waited.as_micros() as u64;
                    }
                    job.state = State::Assigned {
                        worker: wid.clone(),
                        attempt,
                        at: now,
                    };
                    let a = Assignment {
                        job_id: id,
                        attempt,
                        job: job.body.as_ref().clone(),
                    };
                    views[i].running += 1;
                    let w = self
                        .workers
                        .get_mut(&wid)
                        .expect("chosen from the registry");
                    w.running.insert(id);
                    w.outbox.push(a);
                    if !woken.iter().any(|n| Arc::ptr_eq(n, &w.notify)) {
                        woken.push(w.notify.clone());
                    }
                }
            }
        }
        woken
    }

    fn finish(&mut self, id: u64, now: Instant, f: impl FnOnce(&mut WaitReply)) {
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        let mut r = WaitReply {
            retriable: job.retriable,
            solvable: job.solvable,
            workers_lost: job.workers_lost,
            queue_wait_micros: job.queue_wait.as_micros() as u64,
            ..Default::default()
        };
        f(&mut r);
        job.state = State::Finished { reply: r, at: now };
        job.body = Arc::new(Vec::new());
        job.notify.notify_waiters();
    }

    /// The job's answer now, and what to wait on if it is pending.
    pub fn poll(&self, id: u64) -> (WaitReply, Option<Arc<Notify>>) {
        match self.jobs.get(&id) {
            None => (
                WaitReply {
                    state: JobState::Unknown as i32,
                    message: format!("job {id} is unknown to this control plane"),
                    ..Default::default()
                },
                None,
            ),
            Some(j) => match &j.state {
                State::Finished { reply, .. } => (reply.clone(), None),
                _ => (WaitReply::default(), Some(j.notify.clone())),
            },
        }
    }

    /// The instance gave up on the job (it compacted locally).
    pub fn cancel(&mut self, id: u64) {
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        self.counters.cancelled += 1;
        match job.state {
            State::Queued { key, .. } => {
                self.queue.remove(&key);
            }
            State::Assigned {
                worker, attempt, ..
            } => {
                if let Some(w) = self.workers.get_mut(&worker) {
                    w.running.remove(&id);
                    w.outbox.retain(|a| a.job_id != id);
                    w.abort.push((id, attempt));
                }
            }
            State::Finished { .. } => {}
        }
        job.notify.notify_waiters();
    }

    pub fn register(
        &mut self,
        name: String,
        slots: u32,
        resources: Resources,
        now: Instant,
    ) -> String {
        let id = format!("w{}-{}", self.epoch, self.next_worker);
        self.next_worker += 1;
        tracing::info!(worker = %id, %name, slots, "compaction worker registered");
        self.workers.insert(
            id.clone(),
            Worker {
                name,
                slots: slots.max(1),
                resources,
                jobs_at_report: 0,
                last_seen: now,
                running: BTreeSet::new(),
                outbox: Vec::new(),
                abort: Vec::new(),
                notify: Arc::new(Notify::new()),
            },
        );
        id
    }

    /// A heartbeat: `None` if the worker is unknown (it must register again), else the
    /// attempts it must abort: those cancelled, and those it reports running that are no
    /// longer its own. An assignment it should have fetched long ago but does not report
    /// (the fetch reply was lost) is rescheduled.
    pub fn heartbeat(
        &mut self,
        worker: &str,
        resources: Resources,
        running: &[(u64, u32)],
        now: Instant,
    ) -> Option<Vec<(u64, u32)>> {
        let grace = self.cfg.worker_timeout * 2;
        let jobs = &self.jobs;
        let w = self.workers.get_mut(worker)?;
        w.last_seen = now;
        w.resources = resources;
        w.jobs_at_report = running.len() as u32;
        let mut abort = std::mem::take(&mut w.abort);
        for (id, attempt) in running {
            let mine = matches!(
                jobs.get(id).map(|j| &j.state),
                Some(State::Assigned { worker: ww, attempt: a, .. }) if ww == worker && a == attempt
            );
            if !mine && !abort.contains(&(*id, *attempt)) {
                abort.push((*id, *attempt));
            }
        }
        let lost: Vec<(u64, u32)> = w
            .running
            .iter()
            .filter(|id| {
                !w.outbox.iter().any(|a| a.job_id == **id) && !running.iter().any(|(r, _)| r == *id)
            })
            .filter_map(|id| match jobs.get(id).map(|j| &j.state) {
                Some(State::Assigned { attempt, at, .. })
                    if now.saturating_duration_since(*at) > grace =>
                {
                    Some((*id, *attempt))
                }
                _ => None,
            })
            .collect();
        for (id, attempt) in &lost {
            w.running.remove(id);
            abort.push((*id, *attempt));
        }
        for (id, _) in lost {
            tracing::warn!(job = id, %worker, "an assignment never reached its worker; rescheduling");
            if let Some(job) = self.jobs.get_mut(&id) {
                job.solvable += 1;
                job.excluded.push(worker.to_string());
                self.counters.rescheduled += 1;
            }
            self.requeue(id, now);
        }
        Some(abort)
    }

    /// Assignments waiting for `worker`: `None` if unknown, else its outbox (drained) and what
    /// to wait on when empty.
    pub fn fetch(&mut self, worker: &str, now: Instant) -> Option<(Vec<Assignment>, Arc<Notify>)> {
        let w = self.workers.get_mut(worker)?;
        w.last_seen = now;
        Some((std::mem::take(&mut w.outbox), w.notify.clone()))
    }

    /// Whether `worker` has assignments waiting (or is unknown: its fetch must return).
    pub fn has_assignments(&self, worker: &str) -> bool {
        self.workers
            .get(worker)
            .is_none_or(|w| !w.outbox.is_empty())
    }

    /// An attempt ended. Returns whether it is accepted (else stale: discard its outputs).
    pub fn complete(
        &mut self,
        worker: &str,
        id: u64,
        attempt: u32,
        outcome: complete_request::Outcome,
        now: Instant,
    ) -> bool {
        let current = matches!(
            self.jobs.get(&id).map(|j| &j.state),
            Some(State::Assigned { worker: w, attempt: a, .. }) if w == worker && *a == attempt
        );
        // A repeated report of an attempt that already finished the job (the first reply was
        // lost): accepted again, so the worker keeps the outputs the database may install.
        let repeated = matches!(
            self.jobs.get(&id).map(|j| &j.state),
            Some(State::Finished { reply, .. })
                if reply.state == JobState::Done as i32
                    && reply.attempt == attempt
                    && reply.worker.split(' ').next() == Some(worker)
        );
        if repeated {
            return true;
        }
        if !current {
            self.counters.stale_completions += 1;
            return false;
        }
        if let Some(w) = self.workers.get_mut(worker) {
            w.running.remove(&id);
        }
        match outcome {
            complete_request::Outcome::Result(bytes) => {
                self.counters.completed += 1;
                let name = self
                    .workers
                    .get(worker)
                    .map(|w| format!("{worker} ({})", w.name))
                    .unwrap_or_else(|| worker.to_string());
                self.finish(id, now, |r| {
                    r.state = JobState::Done as i32;
                    r.result = bytes;
                    r.attempt = attempt;
                    r.worker = name;
                });
            }
            complete_request::Outcome::Failure(f) => {
                let class = FailureClass::try_from(f.class).unwrap_or(FailureClass::Fatal);
                self.fail(
                    id,
                    worker,
                    Failure {
                        class,
                        message: f.message,
                    },
                    now,
                );
            }
        }
        true
    }

    fn fail(&mut self, id: u64, worker: &str, f: Failure, now: Instant) {
        let retries = self.cfg.same_worker_retries;
        let job = self.jobs.get_mut(&id).expect("checked by the caller");
        match f.class {
            FailureClass::Fatal => {
                self.counters.failed += 1;
                self.finish(id, now, |r| {
                    r.state = JobState::Failed as i32;
                    r.failure = FailureClass::Fatal as i32;
                    r.message = f.message;
                });
                return;
            }
            FailureClass::Retriable if job.same_worker_retries < retries => {
                job.retriable += 1;
                job.same_worker_retries += 1;
                job.preferred = Some(worker.to_string());
                self.counters.retried += 1;
            }
            class => {
                if class == FailureClass::Retriable {
                    job.retriable += 1;
                } else {
                    job.solvable += 1;
                }
                job.preferred = None;
                job.excluded.push(worker.to_string());
                self.counters.rescheduled += 1;
            }
        }
        tracing::info!(job = id, %worker, class = ?f.class, message = %f.message, "compaction attempt failed; rescheduling");
        self.requeue(id, now);
    }

    /// Every attempt failed: back to the instance.
    fn exhausted(&mut self, id: u64, now: Instant) {
        self.counters.failed += 1;
        self.finish(id, now, |r| {
            r.state = JobState::Failed as i32;
            r.failure = FailureClass::Solvable as i32;
            r.message = format!("{MAX_ATTEMPTS} attempts failed");
        });
    }

    fn requeue(&mut self, id: u64, now: Instant) {
        let job = self.jobs.get_mut(&id).expect("requeued jobs exist");
        if job.attempt >= MAX_ATTEMPTS {
            self.exhausted(id, now);
            return;
        }
        let key = queue::key(
            &job.meta,
            job.rescheduled,
            (self.cfg.priority)(&job.meta),
            id,
        );
        job.state = State::Queued { key, since: now };
        self.queue.insert(key, id);
    }

    /// Declares silent workers lost and reschedules their jobs first (§4.4); forgets finished
    /// jobs past their retention.
    pub fn monitor(&mut self, now: Instant) {
        let timeout = self.cfg.worker_timeout;
        let lost: Vec<String> = self
            .workers
            .iter()
            .filter(|(_, w)| now.saturating_duration_since(w.last_seen) > timeout)
            .map(|(id, _)| id.clone())
            .collect();
        for wid in lost {
            let w = self.workers.remove(&wid).expect("listed above");
            self.counters.workers_lost += 1;
            tracing::warn!(worker = %wid, name = %w.name, jobs = w.running.len(), "compaction worker lost; rescheduling its jobs");
            for id in w.running {
                if let Some(job) = self.jobs.get_mut(&id) {
                    job.workers_lost += 1;
                    job.rescheduled = true;
                    job.preferred = None;
                    job.excluded.push(wid.clone());
                    self.counters.rescheduled += 1;
                    self.requeue(id, now);
                }
            }
            w.notify.notify_waiters();
        }
        let retention = self.cfg.result_retention;
        self.jobs.retain(|_, j| match &j.state {
            State::Finished { at, .. } => now.saturating_duration_since(*at) < retention,
            _ => true,
        });
    }

    pub fn status(&self, now: Instant) -> StatusReply {
        StatusReply {
            workers: self
                .workers
                .iter()
                .map(|(id, w)| WorkerStatus {
                    worker_id: id.clone(),
                    name: w.name.clone(),
                    slots: w.slots,
                    running: w.running.iter().copied().collect(),
                    resources: Some(w.resources),
                    last_heartbeat_ms_ago: now.saturating_duration_since(w.last_seen).as_millis()
                        as u64,
                })
                .collect(),
            queue: self
                .queue
                .values()
                .filter_map(|id| {
                    let j = self.jobs.get(id)?;
                    let State::Queued { since, .. } = j.state else {
                        return None;
                    };
                    Some(QueuedJob {
                        job_id: *id,
                        meta: Some(j.meta.clone()),
                        waiting_ms: now.saturating_duration_since(since).as_millis() as u64,
                        attempt: j.attempt,
                    })
                })
                .collect(),
            counters: Some(self.counters),
            assigned: self
                .jobs
                .values()
                .filter(|j| matches!(j.state, State::Assigned { .. }))
                .count() as u64,
            instances: self.instances.len() as u64,
        }
    }
}

#[cfg(test)]
mod tests;
