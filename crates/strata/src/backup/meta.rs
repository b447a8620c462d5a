//! The backup's one document: `meta/<id>.json`, written last, which makes a backup exist
//! (format: `docs/format.md` §18). It names every file the backup is made of with its size and
//! CRC32C, so `verify` and `restore` can tell a damaged file from a good one, and it carries a
//! checksum of its own in a first line, so a flipped byte in it is reported too rather than
//! read as other numbers. Depends on nothing else in the crate but the error type.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The format number a backup's document carries.
pub const BACKUP_FORMAT: u32 = 1;

/// The first word of a backup document.
const MAGIC: &str = "strata-backup";

/// Where a file of the backup goes back to when it is restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Place {
    /// The database directory (fast-tier tables, the manifest, `CURRENT`, WAL files).
    Dir,
    /// The capacity tier (`tables/<restore_as>`).
    Capacity,
}

/// One file of a backup.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupFile {
    /// The object's name under the backup URL: `shared/<crc32c>-<size>.sst` for a table
    /// (shared by every backup that holds the same bytes), `private/<token>/<name>` otherwise.
    pub object: String,
    /// Its name when restored (`000123.sst`, `MANIFEST-000009`, `CURRENT`, `000010.log`).
    pub restore_as: String,
    /// Where it is restored.
    pub place: Place,
    /// Its length in bytes.
    pub size: u64,
    /// CRC32C of its bytes (not masked).
    pub crc32c: u32,
    /// For a table: what identifies it in its source (number, size, key range and sequence
    /// numbers, hashed), so the next backup of the same source finds it here without reading it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// A backup as its document records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupMeta {
    /// Always [`BACKUP_FORMAT`].
    pub format: u32,
    /// 1, 2, 3, … in the order backups were made to this URL.
    pub id: u64,
    /// When it was taken, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// It holds every write of its source up to this sequence number and none after.
    pub sequence: u64,
    /// The source's directory and capacity tier, as the backup's taker named them.
    pub source_dir: String,
    /// The source's capacity-tier URL, if it has one.
    pub source_capacity: Option<String>,
    /// The source's identity (`db::identity`): later backups reuse this backup's tables by
    /// fingerprint only if they are of the same database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_identity: Option<String>,
    /// The caller's own note (RocksDB's `app_metadata`).
    #[serde(default)]
    pub app_metadata: String,
    /// Every file the backup is made of.
    pub files: Vec<BackupFile>,
    /// Files this backup uploaded (the rest were already there, shared with earlier ones).
    pub new_files: u64,
    /// Bytes this backup uploaded.
    pub new_bytes: u64,
}

impl BackupMeta {
    /// The document as stored: `strata-backup <format> <crc32c of the rest, hex>\n<json>`.
    pub fn encode(&self) -> Vec<u8> {
        let body = serde_json::to_vec_pretty(self).expect("a backup document always serializes");
        let mut out =
            format!("{MAGIC} {BACKUP_FORMAT} {:08x}\n", crc32c::crc32c(&body)).into_bytes();
        out.extend_from_slice(&body);
        out
    }

    /// Decodes a stored document; `what` names it in errors. Damage anywhere is `Corruption`.
    pub fn decode(bytes: &[u8], what: &str) -> Result<Self> {
        let bad = |m: String| Error::corruption(format!("{what}: {m}"));
        let nl = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or_else(|| bad("no header line".into()))?;
        let header =
            std::str::from_utf8(&bytes[..nl]).map_err(|_| bad("header is not text".into()))?;
        let body = &bytes[nl + 1..];
        let mut words = header.split(' ');
        if words.next() != Some(MAGIC) {
            return Err(bad("not a backup document".into()));
        }
        let format: u32 = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| bad("bad format number".into()))?;
        if format != BACKUP_FORMAT {
            return Err(bad(format!(
                "format {format} is not supported by this release (it reads format \
                 {BACKUP_FORMAT})"
            )));
        }
        let crc = words
            .next()
            .and_then(|w| {
                u32::from_str_radix(w, 16)
                    .ok()
                    .filter(|c| format!("{c:08x}") == w)
            })
            .ok_or_else(|| bad("bad checksum field".into()))?;
        if words.next().is_some() {
            return Err(bad("extra words in the header".into()));
        }
        let actual = crc32c::crc32c(body);
        if actual != crc {
            return Err(bad(format!(
                "checksum mismatch (stored {crc:08x}, computed {actual:08x})"
            )));
        }
        let m: BackupMeta = serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?;
        if m.format != BACKUP_FORMAT {
            return Err(bad(format!("format {} in the body", m.format)));
        }
        Ok(m)
    }

    /// Total bytes of its files.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }
}

/// The object name of backup `id`'s document.
pub fn meta_name(id: u64) -> String {
    format!("meta/{id:020}.json")
}

/// The backup id a document's object name holds.
pub fn parse_meta_name(name: &str) -> Option<u64> {
    let n = name.strip_prefix("meta/")?.strip_suffix(".json")?;
    (n.len() == 20).then(|| n.parse().ok()).flatten()
}

/// The object holding the next backup id (ids are never reused, even after the newest
/// backup is deleted).
pub const NEXT_ID: &str = "meta/next-id";

/// Whether `restore_as` is a name a file of a backup may be restored under at `place`:
/// `NNNNNN.sst` anywhere; `CURRENT`, `MANIFEST-NNNNNN` and `NNNNNN.log` in the directory.
pub fn valid_restore_name(place: Place, name: &str) -> bool {
    let numbered = |n: &str, suffix: &str| {
        n.strip_suffix(suffix).is_some_and(|d| {
            !d.is_empty() && d.len() <= 20 && d.bytes().all(|b| b.is_ascii_digit())
        })
    };
    let manifest = name
        .strip_prefix("MANIFEST-")
        .is_some_and(|d| !d.is_empty() && d.len() <= 20 && d.bytes().all(|b| b.is_ascii_digit()));
    match place {
        Place::Capacity => numbered(name, ".sst"),
        Place::Dir => {
            numbered(name, ".sst") || numbered(name, ".log") || name == "CURRENT" || manifest
        }
    }
}

/// The object name of a table's bytes: named by content, so backups share it.
pub fn shared_name(crc: u32, size: u64) -> String {
    format!("shared/{crc:08x}-{size}.sst")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> BackupMeta {
        BackupMeta {
            format: BACKUP_FORMAT,
            id: 3,
            created_unix_ms: 1_795_902_562_717,
            sequence: 99,
            source_dir: "/data/db".into(),
            source_capacity: Some("s3://b/db".into()),
            source_identity: Some("0123456789abcdef0123456789abcdef".into()),
            app_metadata: "nightly".into(),
            files: vec![BackupFile {
                object: shared_name(0xdead_beef, 10),
                restore_as: "000007.sst".into(),
                place: Place::Capacity,
                size: 10,
                crc32c: 0xdead_beef,
                fingerprint: Some("ab".into()),
            }],
            new_files: 1,
            new_bytes: 10,
        }
    }

    #[test]
    fn restore_names_stay_in_their_place() {
        let cases = [
            (Place::Dir, "000012.sst", true),
            (Place::Dir, "000013.log", true),
            (Place::Dir, "CURRENT", true),
            (Place::Dir, "MANIFEST-000009", true),
            (Place::Capacity, "000012.sst", true),
            (Place::Capacity, "000013.log", false),
            (Place::Capacity, "CURRENT", false),
            (Place::Dir, "../000012.sst", false),
            (Place::Dir, "/etc/passwd", false),
            (Place::Dir, "PARENT", false),
            (Place::Dir, "LOCK", false),
            (Place::Dir, ".sst", false),
            (Place::Dir, "MANIFEST-", false),
            (Place::Dir, "MANIFEST-1/../x", false),
            (Place::Dir, "12a.sst", false),
        ];
        for (place, name, want) in cases {
            assert_eq!(valid_restore_name(place, name), want, "{place:?} {name}");
        }
    }

    #[test]
    fn documents_round_trip_and_names_parse() {
        let m = meta();
        assert_eq!(BackupMeta::decode(&m.encode(), "m").unwrap(), m);
        assert_eq!(parse_meta_name(&meta_name(42)), Some(42));
        for bad in [
            "meta/42.json",
            "meta/00000000000000000042.jso",
            "x/00000000000000000042.json",
        ] {
            assert_eq!(parse_meta_name(bad), None, "{bad}");
        }
    }

    /// Every single flipped bit anywhere in the document is caught.
    #[test]
    fn any_flipped_bit_is_corruption() {
        let good = meta().encode();
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                let e = BackupMeta::decode(&b, "meta/3").unwrap_err();
                assert!(e.is_corruption(), "byte {i} bit {bit}: {e}");
            }
        }
        for bad in [
            &b""[..],
            b"strata-backup 1 00000000\n",
            b"\n{}",
            b"strata-backup 2 0\n{}",
        ] {
            assert!(BackupMeta::decode(bad, "m").unwrap_err().is_corruption());
        }
    }
}
