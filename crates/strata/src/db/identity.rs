//! The database's identity: a random 128-bit id in the file `IDENTITY`, written at the first
//! open (RocksDB's `IDENTITY`). Copies do not carry it — a checkpoint, clone or restored
//! backup gets an identity of its own at its first open — so it tells two databases apart even
//! when their files have the same numbers (a clone numbers tables from where its source was).
//! Backups use it to reuse only their own source's tables. Depends on `storage` only.

use std::path::Path;

use crate::error::{Error, Result};
use crate::storage::Storage;

/// The file's name in the database directory.
pub const IDENTITY_FILE: &str = "IDENTITY";

/// The identity of the database in `dir`, `None` if it has none yet (never opened by this
/// release). A damaged file is `Corruption`.
pub fn read_identity(storage: &dyn Storage, dir: &Path) -> Result<Option<String>> {
    let path = dir.join(IDENTITY_FILE);
    let bytes = match storage.read_all(&path) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    let id = std::str::from_utf8(&bytes).unwrap_or("").trim();
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::corruption(format!(
            "{}: not a database identity (32 hex digits)",
            path.display()
        )));
    }
    Ok(Some(id.to_string()))
}

/// The identity of the database in `dir`, written first if it has none.
pub(crate) fn ensure_identity(storage: &dyn Storage, dir: &Path) -> Result<String> {
    if let Some(id) = read_identity(storage, dir)? {
        return Ok(id);
    }
    let id = new_identity();
    let tmp = dir.join(format!("{IDENTITY_FILE}.tmp"));
    let mut f = storage.create(&tmp)?;
    f.append(format!("{id}\n").as_bytes())?;
    f.sync()?;
    drop(f);
    storage.rename(&tmp, &dir.join(IDENTITY_FILE))?;
    storage.sync_dir(dir)?;
    Ok(id)
}

/// 32 hex digits from the clock, the process and the thread, hashed.
fn new_identity() -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.update(&nanos.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    h.update(format!("{:?}", std::thread::current().id()).as_bytes());
    let here = 0u8;
    h.update(&(std::ptr::addr_of!(here) as usize).to_le_bytes());
    format!("{:032x}", h.digest128())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    #[test]
    fn written_once_read_back_and_damage_is_corruption() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_identity(&LocalFs, d.path()).unwrap(), None);
        let a = ensure_identity(&LocalFs, d.path()).unwrap();
        assert_eq!(ensure_identity(&LocalFs, d.path()).unwrap(), a);
        assert_eq!(read_identity(&LocalFs, d.path()).unwrap(), Some(a.clone()));
        let e = tempfile::tempdir().unwrap();
        assert_ne!(ensure_identity(&LocalFs, e.path()).unwrap(), a, "unique");
        std::fs::write(d.path().join(IDENTITY_FILE), "xyz").unwrap();
        assert!(read_identity(&LocalFs, d.path())
            .unwrap_err()
            .is_corruption());
    }
}
