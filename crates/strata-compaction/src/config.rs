//! Configuration files of the two service roles (TOML; every key optional, command-line flags
//! override them). See docs/compaction-service.md for the keys.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::plane::PlaneConfig;

/// `strata compaction-service`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    /// `host:port`.
    pub listen: Option<String>,
    pub token: Option<String>,
    /// PEM certificate chain and key: serve TLS.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub heartbeat_ms: Option<u64>,
    /// A worker silent this long is lost (default 1500 ms).
    pub worker_timeout_ms: Option<u64>,
    pub same_worker_retries: Option<u32>,
    pub result_retention_secs: Option<u64>,
    pub max_queue: Option<usize>,
}

impl ServiceConfig {
    pub fn plane(&self) -> PlaneConfig {
        let d = PlaneConfig::default();
        PlaneConfig {
            heartbeat: self
                .heartbeat_ms
                .map(Duration::from_millis)
                .unwrap_or(d.heartbeat),
            worker_timeout: self
                .worker_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(d.worker_timeout),
            same_worker_retries: self.same_worker_retries.unwrap_or(d.same_worker_retries),
            result_retention: self
                .result_retention_secs
                .map(Duration::from_secs)
                .unwrap_or(d.result_retention),
            max_queue: self.max_queue.unwrap_or(d.max_queue),
            priority: d.priority,
        }
    }
}

/// `strata compaction-worker`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    /// The control plane's URL (`http://host:port`, `https://` with TLS).
    pub service: Option<String>,
    pub token: Option<String>,
    /// Where outputs are staged (same file system as the roots, or they are copied).
    pub scratch: Option<PathBuf>,
    /// Directories and capacity-tier URL prefixes jobs may name.
    #[serde(default)]
    pub roots: Vec<String>,
    /// Jobs run at once (default 1).
    pub slots: Option<u32>,
    /// Shown in the control plane's status (default: the host name and process id).
    pub name: Option<String>,
    /// PEM CA certificate to trust for `https://`, and the name to check.
    pub tls_ca: Option<PathBuf>,
    pub tls_domain: Option<String>,
}

/// Reads a TOML file into `T`.
pub fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_parse_and_reject_unknown_keys() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("w.toml");
        std::fs::write(
            &p,
            "service = \"http://127.0.0.1:1\"\nroots = [\"/data\", \"s3://b/p\"]\nslots = 2\n",
        )
        .unwrap();
        let w: WorkerConfig = load(&p).unwrap();
        assert_eq!(w.roots, vec!["/data", "s3://b/p"]);
        assert_eq!(w.slots, Some(2));
        std::fs::write(&p, "listen = \"0.0.0.0:1\"\nworker_timeout_ms = 900\n").unwrap();
        let s: ServiceConfig = load(&p).unwrap();
        assert_eq!(s.plane().worker_timeout, Duration::from_millis(900));
        std::fs::write(&p, "lsiten = \"x\"\n").unwrap();
        assert!(load::<ServiceConfig>(&p)
            .unwrap_err()
            .contains("unknown field"));
    }
}
