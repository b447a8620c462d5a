//! The two small documents checkpoints are made of (format: `docs/formats/checkpoint.md`):
//!
//! - [`CheckpointRecord`]: one per checkpoint or clone, kept in the source's registry
//!   (`checkpoints/<id>.json`); it names the capacity-tier tables the copy refers to, which the
//!   source's garbage collection must keep.
//! - [`ParentLink`]: the `PARENT` file in a checkpoint's directory; it says where the tables
//!   the copy shares with its source live and which record protects them.
//!
//! Both are JSON with a `format` number; decoding rejects anything else with a clear error.
//! Depends on nothing else in the crate but the error type.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The format number both documents carry.
pub const CHECKPOINT_FORMAT: u32 = 1;

/// What a record protects tables for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointKind {
    /// A point-in-time copy (may expire).
    Checkpoint,
    /// A writable fork with its own capacity prefix; it drops tables as it rewrites them.
    Clone,
}

/// A checkpoint or clone as its source's registry records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRecord {
    /// Always [`CHECKPOINT_FORMAT`].
    pub format: u32,
    /// Unique within the source (nanoseconds since the Unix epoch when it was taken).
    pub id: u64,
    /// Checkpoint or clone.
    pub kind: CheckpointKind,
    /// `false` while the copy is being written: a crash then leaves a record that still
    /// protects its tables until it expires, but is not listed as a usable checkpoint.
    pub complete: bool,
    /// When it was taken, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// When its protection lapses (garbage collection then deletes the record), if ever.
    pub expires_unix_ms: Option<u64>,
    /// The copy holds every write up to this sequence number and none after.
    pub sequence: u64,
    /// The copy's directory, as the process that took it named it.
    pub path: String,
    /// Capacity-tier tables of the source the copy refers to.
    pub tables: Vec<u64>,
    /// While incomplete: the lifetime its taker asked for (milliseconds from
    /// `created_unix_ms`; `None`: until released), applied when the record is completed — by
    /// its taker, or by the copy's first open if the taker stopped after the copy was in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_after_ms: Option<u64>,
}

impl CheckpointRecord {
    /// The record marked complete, its protection lasting as its taker asked.
    pub fn completed(mut self) -> Self {
        self.complete = true;
        self.expires_unix_ms = self
            .expires_after_ms
            .take()
            .map(|d| self.created_unix_ms.saturating_add(d));
        self
    }

    /// Whether the record has lapsed at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_unix_ms.is_some_and(|e| e <= now_ms)
    }

    /// The record as stored.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("a record always serializes")
    }

    /// Decodes a stored record; `what` names it in errors.
    pub fn decode(bytes: &[u8], what: &str) -> Result<Self> {
        let r: CheckpointRecord = decode_json(bytes, what)?;
        check_format(r.format, what)?;
        Ok(r)
    }
}

/// The `PARENT` file of a checkpoint or clone directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentLink {
    /// Always [`CHECKPOINT_FORMAT`].
    pub format: u32,
    /// The source's capacity tier (its URL), where the shared tables live.
    pub capacity_url: String,
    /// The record in the source's registry that protects them.
    pub checkpoint_id: u64,
    /// The shared tables this copy still refers to (shrinks as its compactions rewrite them).
    pub tables: Vec<u64>,
}

impl ParentLink {
    /// The file as stored.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("a link always serializes")
    }

    /// Decodes a `PARENT` file; `what` names it in errors.
    pub fn decode(bytes: &[u8], what: &str) -> Result<Self> {
        let l: ParentLink = decode_json(bytes, what)?;
        check_format(l.format, what)?;
        Ok(l)
    }
}

fn decode_json<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::corruption(format!("{what}: {e}")))
}

fn check_format(format: u32, what: &str) -> Result<()> {
    if format != CHECKPOINT_FORMAT {
        return Err(Error::corruption(format!(
            "{what}: format {format} is not supported by this release (it reads format \
             {CHECKPOINT_FORMAT})"
        )));
    }
    Ok(())
}

/// Milliseconds since the Unix epoch, now.
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> CheckpointRecord {
        CheckpointRecord {
            format: CHECKPOINT_FORMAT,
            id: 7,
            kind: CheckpointKind::Clone,
            complete: true,
            created_unix_ms: 1,
            expires_unix_ms: Some(10),
            sequence: 99,
            path: "/x".into(),
            tables: vec![3, 5],
            expires_after_ms: None,
        }
    }

    #[test]
    fn records_and_links_round_trip() {
        let r = record();
        assert_eq!(CheckpointRecord::decode(&r.encode(), "r").unwrap(), r);
        let l = ParentLink {
            format: CHECKPOINT_FORMAT,
            capacity_url: "s3://b/p".into(),
            checkpoint_id: 7,
            tables: vec![1],
        };
        assert_eq!(ParentLink::decode(&l.encode(), "l").unwrap(), l);
    }

    #[test]
    fn expiry_is_inclusive_of_its_instant() {
        let r = record();
        assert!(!r.expired(9));
        assert!(r.expired(10));
        let forever = CheckpointRecord {
            expires_unix_ms: None,
            ..r
        };
        assert!(!forever.expired(u64::MAX));
    }

    #[test]
    fn damage_and_unknown_formats_are_corruption() {
        let mut r = record();
        r.format = 2;
        let e = CheckpointRecord::decode(&r.encode(), "checkpoints/7.json").unwrap_err();
        assert!(
            e.is_corruption() && e.to_string().contains("format 2"),
            "{e}"
        );
        for bad in [&b""[..], b"{", b"[]", b"{\"format\":1}", b"\xff\xfe"] {
            let e = CheckpointRecord::decode(bad, "r").unwrap_err();
            assert!(e.is_corruption(), "{e}");
            assert!(ParentLink::decode(bad, "PARENT")
                .unwrap_err()
                .is_corruption());
        }
    }
}
