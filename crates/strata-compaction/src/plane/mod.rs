//! The control plane (CaaS-LSM §4.3): [`state`] holds the registry, queue and job lifecycle
//! (synchronous, clock-free), [`queue`] and [`select`] are the Scheduler's pure decisions,
//! and [`server`] serves the gRPC API over them with a monitor task that declares silent
//! workers lost.

pub mod queue;
pub mod select;
pub mod server;
pub mod state;

pub use server::{serve, ControlPlane};
pub use state::{Plane, PlaneConfig};
