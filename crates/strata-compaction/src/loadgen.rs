//! Control-plane throughput (CaaS-LSM §5.6): `concurrency` client loops each submit a no-op
//! job (real control metadata, a small body) and wait for its result, against workers run
//! with `--noop` (they complete every job at once). Measures completed jobs per second end
//! to end: submit, schedule, distribute, fetch, complete, wait.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use tonic::transport::Endpoint;
use tonic::Request;

use crate::auth;
use crate::proto::compaction_service_client::CompactionServiceClient;
use crate::proto::{self, submit_reply, JobState};

/// What a run measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct LoadReport {
    pub jobs: u64,
    pub use_local: u64,
    pub concurrency: usize,
    pub connections: usize,
    pub secs: f64,
    pub jobs_per_sec: f64,
    pub p50_us: u64,
    pub p99_us: u64,
}

/// Runs `jobs` no-op jobs through the control plane at `url`.
pub async fn run(
    url: &str,
    token: &str,
    jobs: u64,
    concurrency: usize,
    connections: usize,
) -> Result<LoadReport, String> {
    let mut clients = Vec::new();
    for _ in 0..connections.max(1) {
        let ch = Endpoint::from_shared(url.to_string())
            .map_err(|e| e.to_string())?
            .tcp_nodelay(true)
            .connect()
            .await
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        clients.push(CompactionServiceClient::new(ch));
    }
    let next = Arc::new(AtomicU64::new(0));
    let local = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..concurrency.max(1) {
        let mut c = clients[i % clients.len()].clone();
        let (next, local, token) = (next.clone(), local.clone(), token.to_string());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < jobs {
                let t = Instant::now();
                let mut r = Request::new(proto::SubmitRequest {
                    meta: Some(proto::ControlMetadata {
                        instance: format!("loadgen-{i}"),
                        reason: "LevelSize".into(),
                        input_levels: vec![1, 2],
                        output_level: 2,
                        score: 1.0,
                        input_bytes: 64 << 20,
                        input_files: 4,
                        ..Default::default()
                    }),
                    job: b"{}".to_vec(),
                });
                auth::attach(&mut r, &token).map_err(|e| e.message().to_string())?;
                let id = match c
                    .submit(r)
                    .await
                    .map_err(|e| e.message().to_string())?
                    .into_inner()
                    .answer
                {
                    Some(submit_reply::Answer::JobId(id)) => id,
                    _ => {
                        local.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                };
                loop {
                    let mut w = Request::new(proto::WaitRequest {
                        job_id: id,
                        timeout_ms: 5000,
                    });
                    auth::attach(&mut w, &token).map_err(|e| e.message().to_string())?;
                    let s = c
                        .wait(w)
                        .await
                        .map_err(|e| e.message().to_string())?
                        .into_inner()
                        .state;
                    if s != JobState::Pending as i32 {
                        break;
                    }
                }
                lat.push(t.elapsed().as_micros() as u64);
            }
            Ok::<_, String>(lat)
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.map_err(|e| e.to_string())??);
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let q = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Ok(LoadReport {
        jobs: lat.len() as u64,
        use_local: local.load(Ordering::Relaxed),
        concurrency,
        connections,
        secs,
        jobs_per_sec: lat.len() as f64 / secs.max(1e-9),
        p50_us: q(0.5),
        p99_us: q(0.99),
    })
}
