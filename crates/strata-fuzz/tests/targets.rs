//! Every fuzz target over its seeds and a deterministic batch of mutations, on stable: fails if
//! a decoder panics, violates a target's property or makes an allocation above
//! `alloc::LIMIT`. Also checks that every target has its cargo-fuzz wrapper in `fuzz/`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use strata_fuzz::mutate::{mutate, Rng};
use strata_fuzz::{alloc, TARGETS};

#[global_allocator]
static GUARD: alloc::Guard = alloc::Guard;

/// Mutations over all targets, shared equally (the run stays within seconds in debug builds).
const MUTATIONS: usize = 20_000;

fn check(name: &str, run: fn(&[u8]), input: &[u8]) {
    alloc::reset();
    let r = catch_unwind(AssertUnwindSafe(|| run(input)));
    assert!(
        r.is_ok(),
        "target {name} failed on input {input:02x?} (replay with `strata-fuzz replay`)"
    );
    assert!(
        alloc::largest() <= alloc::LIMIT,
        "target {name}: allocation of {} bytes on input {input:02x?}",
        alloc::largest()
    );
}

#[test]
fn seeds_and_mutations_pass_every_target() {
    for (name, run, seeds) in TARGETS {
        let start = std::time::Instant::now();
        let corpus = seeds();
        assert!(!corpus.is_empty(), "target {name} has no seeds");
        for s in &corpus {
            check(name, *run, s);
        }
        let mut rng = Rng::new(0x5747_a7a5);
        for _ in 0..MUTATIONS / TARGETS.len() {
            let a = &corpus[rng.index(corpus.len())];
            let b = &corpus[rng.index(corpus.len())];
            let m = mutate(&mut rng, a, b);
            check(name, *run, &m);
        }
        eprintln!("{name}: {:?}", start.elapsed());
    }
}

/// Inputs that once failed (`regressions/TARGET-what`), replayed through their target.
#[test]
fn regression_inputs_pass() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("regressions directory") {
        let path = entry.expect("directory entry").path();
        let file = path
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or_default();
        let (name, run, _) = TARGETS
            .iter()
            .filter(|t| file.starts_with(t.0))
            .max_by_key(|t| t.0.len())
            .unwrap_or_else(|| panic!("{file} names no target"));
        check(name, *run, &std::fs::read(&path).expect("regression input"));
        n += 1;
    }
    assert!(n > 0, "no regression inputs found");
}

#[test]
fn every_target_has_a_cargo_fuzz_wrapper() {
    let fuzz = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _, _) in TARGETS {
        let wrapper = std::fs::read_to_string(fuzz.join(format!("fuzz_targets/{name}.rs")))
            .unwrap_or_else(|_| panic!("fuzz/fuzz_targets/{name}.rs is missing"));
        assert!(
            wrapper.contains(&format!("strata_fuzz::{name}::run")),
            "the wrapper of {name} does not call its target"
        );
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] for {name}"
        );
    }
}
