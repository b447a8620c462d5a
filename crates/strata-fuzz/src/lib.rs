//! Fuzz targets for every decoder of untrusted bytes in Strata, and the pieces of a stable
//! mutational fuzzer that drives them (`src/bin/strata-fuzz.rs`).
//!
//! Owns: one module per target under `targets/`, each exposing `pub fn run(data: &[u8])` (feeds
//! the bytes to a real decoder and asserts properties beyond "no panic": round trips, ordering,
//! agreement between incremental and one-shot parsing, termination) and `pub fn seeds() ->
//! Vec<Vec<u8>>` (valid encodings made with the real encoders, so mutation starts deep);
//! [`TARGETS`], the registry the driver, the tests and the cargo-fuzz wrappers in `fuzz/` use;
//! [`mutate`] (the deterministic mutator) and [`alloc`] (an allocation guard that turns a
//! huge allocation driven by a length field into a failure).
//!
//! Invariants: `run` panics only when a decoder misbehaves (a panic inside the decoder, a
//! violated property, or an iteration that does not terminate within a bound derived from the
//! input size); every `seeds()` entry passes `run`; targets are deterministic (no clocks, no
//! randomness). Adding a target: a file in `targets/`, its name in the `targets!` list below, and
//! the 3-line wrapper plus `[[bin]]` entry in `fuzz/` (a test fails if the wrapper is missing).

pub mod alloc;
pub mod mutate;
pub mod util;

/// A fuzz target: its name, its entry point and its seed generator.
pub type Target = (&'static str, fn(&[u8]), fn() -> Vec<Vec<u8>>);

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        /// The targets, one module each.
        pub mod targets {
            $(pub mod $name;)*
        }
        $(pub use targets::$name;)*
        /// Every target, by name.
        pub const TARGETS: &[Target] = &[
            $((stringify!($name), targets::$name::run, targets::$name::seeds),)*
        ];
    };
}

targets!(
    wal,
    batch,
    version_edit,
    manifest,
    sst_footer,
    sst_block,
    sst_filter,
    sst_properties,
    sst_table,
    ralt_block,
    ralt_state,
    ralt_run,
    temperature_file,
    checkpoint_record,
    backup_meta,
    mashmeta,
    key_list,
    meta_sidecar,
    lap_cache,
    compaction_job,
    server_value,
    server_collection,
    server_float,
    resp,
);

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.0 == name)
}
