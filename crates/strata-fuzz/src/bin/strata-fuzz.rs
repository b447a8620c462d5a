//! `strata-fuzz`: a stable-toolchain mutational fuzzer over the targets of the `strata-fuzz`
//! library (no coverage feedback; for coverage-guided runs use cargo-fuzz in `fuzz/`).
//!
//! `strata-fuzz list` | `run TARGET [--execs N] [--seed S] [--out DIR]` | `replay TARGET FILE`
//! | `seeds TARGET DIR` (writes the target's seeds as a corpus for cargo-fuzz).
//! Deterministic given the seed. A failure (panic, an allocation above `alloc::LIMIT`, or one
//! execution running longer than 10 s, caught by a watchdog thread) writes the input to DIR
//! (default `fuzz-crashes/`), prints the replay command and exits with status 1.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use strata_fuzz::mutate::{mutate, Rng};
use strata_fuzz::{alloc, target, Target, TARGETS};

#[global_allocator]
static GUARD: alloc::Guard = alloc::Guard;

/// Corpus entries kept at most (seeds plus mutated inputs kept for further mutation).
const MAX_CORPUS: usize = 4096;
const HANG: Duration = Duration::from_secs(10);

fn usage() -> ExitCode {
    eprintln!(
        "usage: strata-fuzz list\n       strata-fuzz run TARGET [--execs N] [--seed S] [--out DIR]\n       strata-fuzz replay TARGET FILE\n       strata-fuzz seeds TARGET DIR"
    );
    ExitCode::from(2)
}

fn find(name: &str) -> Option<&'static Target> {
    let t = target(name);
    if t.is_none() {
        eprintln!("unknown target {name:?}; `strata-fuzz list` shows them");
    }
    t
}

fn save(out: &Path, name: &str, kind: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(out);
    let h = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let p = out.join(format!("{kind}-{name}-{h:016x}"));
    if let Err(e) = std::fs::write(&p, input) {
        eprintln!("cannot write {}: {e}", p.display());
    }
    p
}

/// Runs one input; `Err` describes the failure.
fn exec(t: &Target, input: &[u8]) -> Result<(), String> {
    alloc::reset();
    let r = catch_unwind(AssertUnwindSafe(|| (t.1)(input)));
    let big = alloc::largest();
    match r {
        Err(p) => Err(p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into())),
        Ok(()) if big > alloc::LIMIT => Err(format!("allocation of {big} bytes")),
        Ok(()) => Ok(()),
    }
}

fn run(t: &'static Target, execs: u64, seed: u64, out: PathBuf) -> ExitCode {
    let name = t.0;
    let mut corpus = (t.2)();
    println!(
        "strata-fuzz: target {name}, seed {seed}, {} seeds, {execs} executions",
        corpus.len()
    );
    // Panics are reported by us, not printed by the default hook for every caught one.
    let last_panic = Arc::new(Mutex::new(String::new()));
    {
        let lp = last_panic.clone();
        std::panic::set_hook(Box::new(move |info| {
            if let Ok(mut l) = lp.lock() {
                *l = info.to_string();
            }
        }));
    }
    for s in &corpus {
        if let Err(e) = exec(t, s) {
            let p = save(&out, name, "crash", s);
            eprintln!(
                "a seed fails: {e}\n{}\ninput: {}",
                last_panic.lock().map(|l| l.clone()).unwrap_or_default(),
                p.display()
            );
            return ExitCode::FAILURE;
        }
    }
    // Watchdog: an execution that runs too long is a hang; save its input and abort.
    let started = Arc::new(AtomicU64::new(0));
    let current = Arc::new(Mutex::new(Vec::<u8>::new()));
    let epoch = Instant::now();
    {
        let (started, current, out) = (started.clone(), current.clone(), out.clone());
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            let s = started.load(Relaxed);
            if s != 0
                && (epoch.elapsed().as_millis() as u64).saturating_sub(s) > HANG.as_millis() as u64
            {
                let input = current.lock().map(|c| c.clone()).unwrap_or_default();
                let p = save(&out, name, "timeout", &input);
                eprintln!(
                    "execution ran longer than {HANG:?}: input saved to {}\nreplay: strata-fuzz replay {name} {}",
                    p.display(),
                    p.display()
                );
                std::process::exit(1);
            }
        });
    }
    let mut rng = Rng::new(seed);
    let begin = Instant::now();
    let mut last_report = Instant::now();
    for i in 0..execs {
        let a = rng.index(corpus.len());
        let b = rng.index(corpus.len());
        let input = mutate(&mut rng, &corpus[a], &corpus[b]);
        if let Ok(mut c) = current.lock() {
            c.clear();
            c.extend_from_slice(&input);
        }
        started.store(epoch.elapsed().as_millis() as u64 + 1, Relaxed);
        let r = exec(t, &input);
        started.store(0, Relaxed);
        if let Err(e) = r {
            let p = save(&out, name, "crash", &input);
            let detail = last_panic.lock().map(|l| l.clone()).unwrap_or_default();
            eprintln!(
                "FAILURE after {i} executions (seed {seed}): {e}\n{detail}\ninput saved to {}\nreplay: strata-fuzz replay {name} {}",
                p.display(),
                p.display()
            );
            return ExitCode::FAILURE;
        }
        // Keep some mutants as parents so mutations stack over generations.
        if corpus.len() < MAX_CORPUS && rng.one_in(64) {
            corpus.push(input);
        } else if rng.one_in(256) {
            let k = rng.index(corpus.len());
            corpus[k] = input;
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            let s = begin.elapsed().as_secs_f64();
            println!("#{} {:.0} exec/s", i + 1, (i + 1) as f64 / s);
            last_report = Instant::now();
        }
    }
    let s = begin.elapsed().as_secs_f64();
    println!(
        "done: target {name}, seed {seed}, {execs} executions in {s:.1} s ({:.0} exec/s), no failures",
        execs as f64 / s.max(1e-9)
    );
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            for t in TARGETS {
                println!("{}", t.0);
            }
            ExitCode::SUCCESS
        }
        Some("run") if args.len() >= 2 => {
            let Some(t) = find(&args[1]) else {
                return ExitCode::from(2);
            };
            let (mut execs, mut seed, mut out) =
                (1_000_000u64, 1u64, PathBuf::from("fuzz-crashes"));
            let mut it = args[2..].iter();
            while let Some(flag) = it.next() {
                let Some(v) = it.next() else {
                    return usage();
                };
                match flag.as_str() {
                    "--execs" => match v.parse() {
                        Ok(n) => execs = n,
                        Err(_) => return usage(),
                    },
                    "--seed" => match v.parse() {
                        Ok(n) => seed = n,
                        Err(_) => return usage(),
                    },
                    "--out" => out = PathBuf::from(v),
                    _ => return usage(),
                }
            }
            run(t, execs, seed, out)
        }
        Some("replay") if args.len() == 3 => {
            let Some(t) = find(&args[1]) else {
                return ExitCode::from(2);
            };
            let input = match std::fs::read(&args[2]) {
                Ok(b) => b,
                Err(e) => {
                    eprintln!("cannot read {}: {e}", args[2]);
                    return ExitCode::from(2);
                }
            };
            // The default panic hook prints the panic and its location.
            match exec(t, &input) {
                Ok(()) => {
                    println!("{} bytes: no failure", input.len());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("failure: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("seeds") if args.len() == 3 => {
            let Some(t) = find(&args[1]) else {
                return ExitCode::from(2);
            };
            let dir = PathBuf::from(&args[2]);
            for (i, s) in (t.2)().iter().enumerate() {
                if let Err(e) = std::fs::create_dir_all(&dir)
                    .and_then(|()| std::fs::write(dir.join(format!("seed-{i:03}")), s))
                {
                    eprintln!("cannot write seeds to {}: {e}", dir.display());
                    return ExitCode::FAILURE;
                }
            }
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}
