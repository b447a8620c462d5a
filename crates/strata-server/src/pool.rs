//! The bounded blocking pool through which async code calls the synchronous engine.
//!
//! Owns: a semaphore limiting how many engine calls run at once, on tokio's blocking threads.
//! Invariants: at most `threads` closures run concurrently; a closure that panics is reported
//! as an error to its caller, never unwinds into the connection task; nothing here holds a lock.
//! Depends on nothing else in the crate.

use std::sync::Arc;

use tokio::sync::Semaphore;

/// A closure submitted to the pool panicked or the runtime is shutting down.
#[derive(Debug, thiserror::Error)]
#[error("engine task failed: {0}")]
pub struct PoolError(String);

/// Runs blocking engine work with bounded concurrency.
#[derive(Clone)]
pub struct EnginePool {
    permits: Arc<Semaphore>,
}

impl EnginePool {
    pub fn new(threads: usize) -> Self {
        EnginePool {
            permits: Arc::new(Semaphore::new(threads.max(1))),
        }
    }

    /// Runs `f` on a blocking thread once a permit is free, and returns its result.
    pub async fn run<F, R>(&self, f: F) -> Result<R, PoolError>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| PoolError(e.to_string()))?;
        let r = tokio::task::spawn_blocking(move || {
            let r = f();
            drop(permit);
            r
        })
        .await;
        r.map_err(|e| PoolError(e.to_string()))
    }
}
