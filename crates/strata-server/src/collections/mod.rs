//! Collections — hashes, lists, sets, sorted sets and streams — stored the Kvrocks way: one metadata
//! record per key in database 0 (the `value` header says the type and expiry; the payload is a
//! [`meta::Meta`]: encoding version, collection version, size, list bounds) and one engine
//! record per element in the sub-key namespace, prefixed by the user key and the collection
//! version ([`subkey`]). Sorted sets keep a second family of sub-keys ordered by score
//! ([`score`]) for range queries; streams keep their groups, pending entries and consumers
//! in sub-keys of their own kinds ([`stream`]).
//!
//! Invariants: (a) a collection's metadata and the sub-keys a command changes are written in
//! one engine batch, so a crash leaves all or none of a command; (b) a sub-key is live exactly
//! when the key's current metadata is a live collection with the sub-key's version — DEL,
//! expiry and overwrite touch only the metadata (O(1)) and a re-created key gets a fresh
//! version ([`meta::next_version`]), so stale sub-keys are never read and the compaction
//! filter ([`gc`]) drops them; (c) an empty collection has no metadata (its key does not
//! exist) — except a stream, which exists empty as in redis; (d) stored metadata and sub-keys are untrusted bytes: decoding never panics and a
//! malformed record is an error, never a wrong answer.
//! Commands reach these through [`access`] (`Ctx` helpers); collection commands run in a
//! segment of their own (see `executor`), so they read the engine directly.
//! Depends on `keyspace`, `value`, `expiry`, `store` and the engine; never on the network layer.

pub mod access;
pub mod gc;
pub mod meta;
pub mod score;
pub mod stream;
pub mod subkey;
