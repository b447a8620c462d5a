//! Which backups and files purging deletes: pure decisions over the backups' documents and a
//! listing of the backup URL, tested with tables of cases. Depends on `backup::meta` only.

use std::collections::HashSet;

use super::meta::BackupMeta;

/// The ids of the backups beyond the `keep` newest, oldest first.
pub fn beyond_newest(ids: &[u64], keep: usize) -> Vec<u64> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let n = sorted.len().saturating_sub(keep);
    sorted.truncate(n);
    sorted
}

/// The listed objects (under `shared/` and `private/`) no remaining backup names: tables
/// only deleted backups shared, and the private files of deleted or interrupted backups.
/// Objects elsewhere (documents, anything a user put there) are never chosen.
pub fn unreferenced(remaining: &[BackupMeta], listed: &[String]) -> Vec<String> {
    let named: HashSet<&str> = remaining
        .iter()
        .flat_map(|m| m.files.iter().map(|f| f.object.as_str()))
        .collect();
    let mut out: Vec<String> = listed
        .iter()
        .filter(|o| o.starts_with("shared/") || o.starts_with("private/"))
        .filter(|o| !named.contains(o.as_str()))
        .cloned()
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::super::meta::{BackupFile, Place, BACKUP_FORMAT};
    use super::*;

    fn meta(id: u64, objects: &[&str]) -> BackupMeta {
        BackupMeta {
            format: BACKUP_FORMAT,
            id,
            created_unix_ms: 0,
            sequence: 0,
            source_dir: String::new(),
            source_capacity: None,
            source_identity: None,
            app_metadata: String::new(),
            files: objects
                .iter()
                .map(|o| BackupFile {
                    object: o.to_string(),
                    restore_as: String::new(),
                    place: Place::Dir,
                    size: 0,
                    crc32c: 0,
                    fingerprint: None,
                })
                .collect(),
            new_files: 0,
            new_bytes: 0,
        }
    }

    #[test]
    fn keeps_the_newest() {
        let cases: &[(&[u64], usize, &[u64])] = &[
            (&[], 2, &[]),
            (&[1, 2], 2, &[]),
            (&[3, 1, 2], 2, &[1]),
            (&[5, 4, 9, 7], 1, &[4, 5, 7]),
            (&[1, 2], 0, &[1, 2]),
        ];
        for (ids, keep, want) in cases {
            assert_eq!(
                beyond_newest(ids, *keep),
                want.to_vec(),
                "{ids:?} keep {keep}"
            );
        }
    }

    #[test]
    fn deletes_only_what_no_remaining_backup_names() {
        let remaining = [
            meta(
                2,
                &["shared/a-1.sst", "shared/b-2.sst", "private/t2/CURRENT"],
            ),
            meta(3, &["shared/b-2.sst", "private/t3/CURRENT"]),
        ];
        let listed: Vec<String> = [
            "shared/a-1.sst",
            "shared/b-2.sst",
            "shared/old-9.sst",
            "private/t1/CURRENT",
            "private/t2/CURRENT",
            "private/t3/CURRENT",
            "private/killed/MANIFEST-000004",
            "meta/00000000000000000002.json",
            "README",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            unreferenced(&remaining, &listed),
            vec![
                "private/killed/MANIFEST-000004".to_string(),
                "private/t1/CURRENT".to_string(),
                "shared/old-9.sst".to_string(),
            ]
        );
        // No backup left: every file goes, documents and strangers stay.
        assert_eq!(unreferenced(&[], &listed).len(), 7);
    }
}
