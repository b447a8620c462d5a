//! Hot-record tracking and promotion (HotRAP, `papers/hotrap.txt`).
//!
//! Owns [`ralt`], the Recent Access Lookup Table that scores key accesses and answers "is this
//! key hot" and "how many hot bytes in this range". The promotion cache (§3.1, §3.3–3.4) will
//! live here too, beside it. Depends on `storage`, `sst::filter`, `coding`, `error`; never on
//! `db`, `compaction` or `version`.

pub mod ralt;
