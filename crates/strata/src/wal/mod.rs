//! The log format shared by the write-ahead log and the manifest: records fragmented across
//! 32 KiB blocks, each fragment with a CRC32C. See `docs/format.md` ("Log files").
//!
//! Owns: [`LogWriter`] (append, flush, sync), [`LogReader`] (replay with torn-tail
//! tolerance) and [`LogSet`] (the live WALs and the fsyncs they still owe). Invariants: a record is acknowledged only after it is flushed to the OS (and
//! synced if asked); on replay, a damaged suffix of the *last* log with nothing valid after it is
//! a torn tail and is dropped, any other damage is corruption. With the extended WAL the log
//! also carries key-list records ([`keylist`]) next to write batches, and a sealed log ends in a
//! log-link record naming the next log ([`link`]). Depends on `storage`,
//! `coding`, `error`.

mod format;
pub mod keylist;
pub mod link;
mod reader;
mod set;
mod writer;

pub use format::{BLOCK_SIZE, HEADER_SIZE};
pub use reader::{LogReader, ReadOutcome};
pub use set::LogSet;
pub use writer::LogWriter;

/// Masks a CRC so that CRCs of data that embeds CRCs are not themselves likely CRCs.
pub fn mask_crc(c: u32) -> u32 {
    format::mask(c)
}
