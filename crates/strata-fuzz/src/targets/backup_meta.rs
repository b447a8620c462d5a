//! Target `backup_meta`: `backup::BackupMeta::decode`, a backup's document (`docs/format.md`
//! §18), which `restore` trusts to name the files it writes and `purge` to name the files it
//! keeps.
//!
//! Properties: a decoded document has format 1, re-encoding it decodes to the same value, and
//! a single flipped byte of a valid encoding never decodes.

use strata::backup::{BackupFile, BackupMeta, Place, BACKUP_FORMAT};

pub fn run(data: &[u8]) {
    if let Ok(m) = BackupMeta::decode(data, "meta") {
        assert_eq!(m.format, BACKUP_FORMAT);
        let again = m.encode();
        assert_eq!(BackupMeta::decode(&again, "again").expect("round trip"), m);
        // The checksum catches any one changed byte of what this build writes.
        let i = data.len() % again.len().max(1);
        let mut bad = again.clone();
        bad[i] ^= 0x01;
        assert!(BackupMeta::decode(&bad, "flipped").is_err(), "byte {i}");
    }
}

pub fn seeds() -> Vec<Vec<u8>> {
    let m = BackupMeta {
        format: BACKUP_FORMAT,
        id: 7,
        created_unix_ms: 1_795_902_562_717,
        sequence: 123_456,
        source_dir: "/var/lib/strata".into(),
        source_capacity: Some("s3://bucket/db1".into()),
        source_identity: Some("00112233445566778899aabbccddeeff".into()),
        app_metadata: "nightly".into(),
        files: vec![
            BackupFile {
                object: "shared/0badf00d-4096.sst".into(),
                restore_as: "000012.sst".into(),
                place: Place::Capacity,
                size: 4096,
                crc32c: 0x0bad_f00d,
                fingerprint: Some("00112233445566778899aabbccddeeff".into()),
            },
            BackupFile {
                object: "private/1795902562717935512/CURRENT".into(),
                restore_as: "CURRENT".into(),
                place: Place::Dir,
                size: 16,
                crc32c: 1,
                fingerprint: None,
            },
        ],
        new_files: 2,
        new_bytes: 4112,
    };
    vec![m.encode()]
}
