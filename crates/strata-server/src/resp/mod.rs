//! The Redis serialization protocol (RESP2 and RESP3), as bytes in and bytes out.
//!
//! Owns: the incremental request parser ([`parser`], multibulk and inline requests), the
//! inline-argument splitter ([`inline`]), the reply value ([`reply::Reply`]) and its encoding for
//! either protocol version ([`writer`]).
//! Invariants: parsing never panics on any input and never allocates more than the configured
//! limits allow (bulk length, multibulk count, inline line length); a protocol error is final
//! for the connection. Encoding is a pure function of (reply, protocol version).
//! Must not depend on the engine, the command table or the network layer.

pub mod inline;
pub mod parser;
pub mod reply;
pub mod writer;

pub use parser::{ParseLimits, Parser, ProtocolError};
pub use reply::Reply;
pub use writer::{encode, Protocol};
