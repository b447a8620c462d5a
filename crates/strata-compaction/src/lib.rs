//! Compaction as a service for Strata (CaaS-LSM, `../shared/papers/caas-lsm.txt` §4): the
//! gRPC protocol (`proto/compaction.proto`), the control plane ([`plane`]: worker registry
//! and heartbeats, priority queue, worker choice, failure handling), the compaction worker
//! ([`worker`], a Compaction Service Agent) and the engine's client ([`client`], a
//! [`strata::compaction::remote::CompactionService`]).
//!
//! The engine knows nothing of this crate: it decides local or remote, verifies and installs
//! results behind the `CompactionService` trait (`strata::compaction::remote`). Every RPC
//! carries a shared token ([`auth`]); TLS is optional ([`tls`]). Depends on `strata`, tonic
//! and prost; never on the server, the CLI or the benchmark.

pub mod auth;
pub mod client;
pub mod config;
pub mod loadgen;
pub mod plane;
pub mod resources;
pub mod tls;
pub mod worker;

/// The generated protocol types and stubs.
pub mod proto {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("strata.compaction.v1");
}

pub use client::RemoteService;
pub use config::{ServiceConfig, WorkerConfig};
