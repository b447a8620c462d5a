//! Shutdown coordination: one flag every task can wait on.
//!
//! Triggered by the SHUTDOWN command or by the embedding program (the CLI wires SIGTERM and
//! SIGINT to it). Invariant: once triggered it stays triggered; the server then stops
//! accepting, lets every connection finish the batch it is executing, flushes and closes the
//! engine. Depends on nothing else in the crate.

use std::sync::Arc;

use tokio::sync::watch;

/// A cloneable handle that triggers or observes shutdown.
#[derive(Clone)]
pub struct ShutdownHandle {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for ShutdownHandle {
    fn default() -> Self {
        Self::new()
    }
}

impl ShutdownHandle {
    pub fn new() -> Self {
        ShutdownHandle {
            tx: Arc::new(watch::channel(false).0),
        }
    }

    /// Asks the server to shut down (idempotent).
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_triggered(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once shutdown has been triggered.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|v| *v).await;
    }
}
