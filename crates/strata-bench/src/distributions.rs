//! Key distributions: which record index an operation touches. [`DistSpec`] is the parsed,
//! serializable description (`uniform`, `zipfian[:θ]`, `latest[:θ]`, `hotspot:DATA[:OPS][@OFFSET]`);
//! [`KeyChooser`] samples it over a record count; [`Schedule`] switches between distributions at
//! given times of the run phase (HotRAP §4.6: the hotspot appears, grows, moves, shrinks).
//!
//! Invariants: every sample is a record index in `[0, n)` (`latest`: in `[0, inserted)`);
//! choosers are immutable after construction and shared by all worker threads (state lives in
//! the caller's [`Rng`]); `zipfian` is scrambled by a bijection of `[0, n)`, so the hottest
//! ranks are spread over the records but every rank still maps to a distinct record.
//! Depends only on `rng`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rng::{mix64, Rng};

/// YCSB's default zipfian constant.
pub const DEFAULT_THETA: f64 = 0.99;

/// A key distribution, as given on the command line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum DistSpec {
    Uniform,
    /// Scrambled zipfian: rank `r` is chosen with probability proportional to `1 / r^theta`.
    Zipfian {
        theta: f64,
    },
    /// Zipfian over recency: the most recently inserted records are the hottest (YCSB-D).
    Latest {
        theta: f64,
    },
    /// `data` (a fraction of the records, contiguous in index order starting at `offset * n`)
    /// receives `ops` of the operations, uniformly; the rest go uniformly to the other records.
    Hotspot {
        data: f64,
        ops: f64,
        offset: f64,
    },
}

impl DistSpec {
    pub fn hotspot(data: f64) -> Self {
        DistSpec::Hotspot {
            data,
            ops: 1.0 - data,
            offset: 0.0,
        }
    }
}

impl fmt::Display for DistSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistSpec::Uniform => write!(f, "uniform"),
            DistSpec::Zipfian { theta } => write!(f, "zipfian:{theta}"),
            DistSpec::Latest { theta } => write!(f, "latest:{theta}"),
            DistSpec::Hotspot { data, ops, offset } => {
                write!(f, "hotspot:{data}:{ops}")?;
                if *offset != 0.0 {
                    write!(f, "@{offset}")?;
                }
                Ok(())
            }
        }
    }
}

fn fraction(s: &str, what: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = if let Some(p) = t.strip_suffix('%') {
        p.parse::<f64>().map(|v| v / 100.0)
    } else {
        t.parse::<f64>()
    }
    .map_err(|_| format!("{what} {s:?} is not a number"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{what} {s:?} must be in 0..=1 (or 0%..=100%)"));
    }
    Ok(v)
}

impl FromStr for DistSpec {
    type Err = String;
    /// `uniform`, `zipfian`, `zipfian:0.9`, `latest`, `hotspot:0.05` (5% of the records get 95%
    /// of the operations), `hotspot:0.05:0.9`, `hotspot-5%` (HotRAP's notation),
    /// `hotspot:0.05@0.5` (the hot range starts at the middle record).
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        let (name, rest) = match s.split_once([':', '-']) {
            Some((n, r)) => (n, Some(r)),
            None => (s.as_str(), None),
        };
        let theta = |rest: Option<&str>| -> Result<f64, String> {
            match rest {
                None => Ok(DEFAULT_THETA),
                Some(t) => {
                    let v: f64 = t
                        .parse()
                        .map_err(|_| format!("zipfian constant {t:?} is not a number"))?;
                    if !(v > 0.0 && v < 1.0) {
                        return Err(format!("zipfian constant {v} must be in (0, 1)"));
                    }
                    Ok(v)
                }
            }
        };
        match name {
            "uniform" if rest.is_none() => Ok(DistSpec::Uniform),
            "zipfian" | "zipf" => Ok(DistSpec::Zipfian { theta: theta(rest)? }),
            "latest" => Ok(DistSpec::Latest { theta: theta(rest)? }),
            "hotspot" => {
                let rest = rest.ok_or("hotspot needs a data fraction: hotspot:0.05")?;
                let (fracs, offset) = match rest.split_once('@') {
                    Some((f, o)) => (f, fraction(o, "hotspot offset")?),
                    None => (rest, 0.0),
                };
                let (data, ops) = match fracs.split_once(':') {
                    Some((d, o)) => (
                        fraction(d, "hotspot data fraction")?,
                        fraction(o, "hotspot operation fraction")?,
                    ),
                    None => {
                        let d = fraction(fracs, "hotspot data fraction")?;
                        (d, 1.0 - d)
                    }
                };
                if data <= 0.0 {
                    return Err("hotspot data fraction must be positive".into());
                }
                Ok(DistSpec::Hotspot { data, ops, offset })
            }
            _ => Err(format!(
                "unknown distribution {s:?} (uniform, zipfian[:θ], latest[:θ], hotspot:DATA[:OPS][@OFFSET])"
            )),
        }
    }
}

/// A bijection of `[0, n)`: a 4-round Feistel network on the smallest even number of bits
/// covering `n`, with cycle walking (values `>= n` are permuted again).
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut r = Rng::new(seed ^ 0x7065_726d);
        Permutation {
            n,
            half_bits,
            keys: [r.next_u64(), r.next_u64(), r.next_u64(), r.next_u64()],
        }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    pub fn apply(&self, i: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }
}

/// Gray et al.'s zipfian generator ("Quickly generating billion-record synthetic databases",
/// as in YCSB): ranks in `[0, n)`, rank 0 the most frequent.
#[derive(Clone, Debug)]
pub struct Zipfian {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl Zipfian {
    pub fn new(n: u64, theta: f64) -> Self {
        let n = n.max(1);
        let zeta = |n: u64| (1..=n).map(|i| (i as f64).powf(-theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let eta = if n > 2 {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        } else {
            0.0
        };
        Zipfian {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    pub fn rank(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 || self.n == 1 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta || self.n == 2 {
            return 1;
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }

    /// The probability of rank `r` (for tests and reports).
    pub fn probability(&self, r: u64) -> f64 {
        ((r + 1) as f64).powf(-self.theta) / self.zetan
    }
}

/// A distribution ready to sample over `n` records.
#[derive(Clone, Debug)]
pub enum KeyChooser {
    Uniform {
        n: u64,
    },
    Zipfian {
        z: Zipfian,
        perm: Permutation,
    },
    Latest {
        z: Zipfian,
    },
    Hotspot {
        n: u64,
        start: u64,
        hot: u64,
        ops: f64,
    },
}

impl KeyChooser {
    /// `n` is the number of loaded records; `seed` fixes the zipfian scrambling.
    pub fn new(spec: &DistSpec, n: u64, seed: u64) -> Self {
        let n = n.max(1);
        match *spec {
            DistSpec::Uniform => KeyChooser::Uniform { n },
            DistSpec::Zipfian { theta } => KeyChooser::Zipfian {
                z: Zipfian::new(n, theta),
                perm: Permutation::new(n, seed),
            },
            DistSpec::Latest { theta } => KeyChooser::Latest {
                z: Zipfian::new(n, theta),
            },
            DistSpec::Hotspot { data, ops, offset } => {
                let hot = ((n as f64 * data).round() as u64).clamp(1, n);
                let start = ((n as f64 * offset) as u64).min(n - 1);
                KeyChooser::Hotspot { n, start, hot, ops }
            }
        }
    }

    /// A record index. `inserted` is the number of records that exist now (loaded plus
    /// inserted by the run phase); only `latest` follows it.
    pub fn sample(&self, rng: &mut Rng, inserted: u64) -> u64 {
        match self {
            KeyChooser::Uniform { n } => rng.below(*n),
            KeyChooser::Zipfian { z, perm } => perm.apply(z.rank(rng)),
            KeyChooser::Latest { z } => {
                let newest = inserted.max(1) - 1;
                newest.saturating_sub(z.rank(rng))
            }
            KeyChooser::Hotspot { n, start, hot, ops } => {
                let cold = n - hot;
                let j = if cold == 0 || rng.unit() < *ops {
                    rng.below(*hot)
                } else {
                    hot + rng.below(cold)
                };
                (start + j) % n
            }
        }
    }

    /// Whether record `i` is in the hot range (hotspot only).
    pub fn is_hot(&self, i: u64) -> bool {
        match self {
            KeyChooser::Hotspot { n, start, hot, .. } => (i + n - start) % n < *hot,
            _ => false,
        }
    }
}

/// One stage of a [`Schedule`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    /// Seconds after the start of the run phase.
    pub at_secs: f64,
    pub dist: DistSpec,
}

/// Distributions that take over at given times of the run phase (HotRAP §4.6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    pub stages: Vec<Stage>,
}

impl Schedule {
    pub fn constant(dist: DistSpec) -> Self {
        Schedule {
            stages: vec![Stage { at_secs: 0.0, dist }],
        }
    }

    /// HotRAP §4.6's dynamic workload over `total`: uniform; hotspot 1%; grows to 3%, to 5%;
    /// moves to the other half of the records; shrinks to 4%, to 2% (seven equal stages; a
    /// hotspot of x% of the records gets 100 - x% of the operations).
    pub fn hotrap(total: Duration) -> Self {
        let step = total.as_secs_f64() / 7.0;
        let h = |data: f64, offset: f64| DistSpec::Hotspot {
            data,
            ops: 1.0 - data,
            offset,
        };
        let dists = [
            DistSpec::Uniform,
            h(0.01, 0.0),
            h(0.03, 0.0),
            h(0.05, 0.0),
            h(0.05, 0.5),
            h(0.04, 0.5),
            h(0.02, 0.5),
        ];
        Schedule {
            stages: dists
                .into_iter()
                .enumerate()
                .map(|(i, dist)| Stage {
                    at_secs: step * i as f64,
                    dist,
                })
                .collect(),
        }
    }

    /// Parses `T=DIST,T=DIST,...` (T in seconds, optional `s`/`m` suffix; the first stage at 0),
    /// or `hotrap` (needs the run duration).
    pub fn parse(s: &str, duration: Option<Duration>) -> Result<Self, String> {
        if s.trim() == "hotrap" {
            let d = duration
                .filter(|d| !d.is_zero())
                .ok_or("the hotrap schedule needs --duration")?;
            return Ok(Schedule::hotrap(d));
        }
        let mut stages = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let (t, d) = part
                .split_once('=')
                .ok_or_else(|| format!("schedule stage {part:?} is not TIME=DISTRIBUTION"))?;
            let t = t.trim();
            let secs = if let Some(m) = t.strip_suffix('m') {
                m.parse::<f64>().map(|v| v * 60.0)
            } else {
                t.trim_end_matches('s').parse::<f64>()
            }
            .map_err(|_| format!("schedule time {t:?} is not a number of seconds"))?;
            stages.push(Stage {
                at_secs: secs,
                dist: d.parse()?,
            });
        }
        if stages.is_empty() {
            return Err("empty schedule".into());
        }
        if stages[0].at_secs != 0.0 {
            return Err("the first schedule stage must start at 0".into());
        }
        if stages.windows(2).any(|w| w[1].at_secs <= w[0].at_secs) {
            return Err("schedule times must increase".into());
        }
        Ok(Schedule { stages })
    }

    /// Builds the choosers of every stage.
    pub fn choosers(&self, n: u64, seed: u64) -> ScheduledChooser {
        ScheduledChooser {
            stages: self
                .stages
                .iter()
                .map(|s| (s.at_secs, KeyChooser::new(&s.dist, n, seed)))
                .collect(),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [only] = self.stages.as_slice() {
            return write!(f, "{}", only.dist);
        }
        for (i, s) in self.stages.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}={}", s.at_secs, s.dist)?;
        }
        Ok(())
    }
}

/// The choosers of a schedule; the caller passes the elapsed run time.
#[derive(Clone, Debug)]
pub struct ScheduledChooser {
    stages: Vec<(f64, KeyChooser)>,
}

impl ScheduledChooser {
    /// The stage in force `elapsed_secs` into the run.
    pub fn stage(&self, elapsed_secs: f64) -> usize {
        self.stages
            .iter()
            .rposition(|(at, _)| *at <= elapsed_secs)
            .unwrap_or(0)
    }

    pub fn chooser(&self, stage: usize) -> &KeyChooser {
        &self.stages[stage].1
    }

    pub fn len(&self) -> usize {
        self.stages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for (s, want) in [
            ("uniform", DistSpec::Uniform),
            ("zipfian", DistSpec::Zipfian { theta: 0.99 }),
            ("zipfian:0.8", DistSpec::Zipfian { theta: 0.8 }),
            ("latest", DistSpec::Latest { theta: 0.99 }),
            ("hotspot:0.05", DistSpec::hotspot(0.05)),
            ("hotspot-5%", DistSpec::hotspot(0.05)),
            (
                "hotspot:0.1:0.8@0.5",
                DistSpec::Hotspot {
                    data: 0.1,
                    ops: 0.8,
                    offset: 0.5,
                },
            ),
        ] {
            let got: DistSpec = s.parse().unwrap();
            assert_eq!(got, want, "{s}");
            assert_eq!(got.to_string().parse::<DistSpec>().unwrap(), want);
        }
        for bad in [
            "",
            "gauss",
            "hotspot",
            "hotspot:2",
            "zipfian:x",
            "zipfian:1",
            "uniform:3",
        ] {
            assert!(bad.parse::<DistSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let p = Permutation::new(n, 5);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = p.apply(i);
                assert!(x < n);
                assert!(!seen[x as usize], "n={n} i={i}");
                seen[x as usize] = true;
            }
        }
    }

    #[test]
    fn hotspot_sends_the_op_fraction_to_the_data_fraction() {
        let n = 100_000;
        for spec in ["hotspot:0.05", "hotspot:0.2:0.5@0.9"] {
            let spec: DistSpec = spec.parse().unwrap();
            let DistSpec::Hotspot { data, ops, .. } = spec else {
                unreachable!()
            };
            let c = KeyChooser::new(&spec, n, 1);
            let hot_records = (0..n).filter(|&i| c.is_hot(i)).count() as f64;
            assert!((hot_records / n as f64 - data).abs() < 1e-3);
            let mut r = Rng::new(2);
            let samples = 200_000;
            let hot_ops = (0..samples)
                .filter(|_| {
                    let i = c.sample(&mut r, n);
                    assert!(i < n);
                    c.is_hot(i)
                })
                .count() as f64;
            let share = hot_ops / samples as f64;
            assert!((share - ops).abs() < 0.01, "{spec}: {share}");
        }
    }

    #[test]
    fn zipfian_is_skewed_like_theory() {
        let n = 10_000;
        let z = Zipfian::new(n, 0.99);
        let mut r = Rng::new(3);
        let samples = 500_000;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..samples {
            counts[z.rank(&mut r) as usize] += 1;
        }
        // The hottest rank's share matches 1/zeta(n) (about 10% for n = 10k, θ = 0.99).
        let top = counts[0] as f64 / samples as f64;
        assert!((top - z.probability(0)).abs() < 0.01, "{top}");
        // The top 1% of ranks take far more than 1% of the operations.
        let top1: u64 = counts[..100].iter().sum();
        let share = top1 as f64 / samples as f64;
        let want: f64 = (0..100).map(|r| z.probability(r)).sum();
        assert!((share - want).abs() < 0.02, "{share} vs {want}");
        assert!(share > 0.4);
        // Skew falls with θ.
        let z5 = Zipfian::new(n, 0.5);
        let top5: f64 = (0..100).map(|r| z5.probability(r)).sum();
        assert!(top5 < want / 2.0);
    }

    #[test]
    fn scrambled_zipfian_spreads_hot_keys() {
        let n = 100_000;
        let c = KeyChooser::new(&DistSpec::Zipfian { theta: 0.99 }, n, 1);
        let mut r = Rng::new(4);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..100_000 {
            *counts.entry(c.sample(&mut r, n)).or_insert(0u32) += 1;
        }
        let mut hot: Vec<(u64, u32)> = counts.into_iter().collect();
        hot.sort_by_key(|&(_, c)| std::cmp::Reverse(c));
        // The ten hottest records are not the ten first ones.
        assert!(hot[..10].iter().filter(|(i, _)| *i < 10).count() < 3);
        assert!(hot.iter().all(|&(i, _)| i < n));
    }

    #[test]
    fn latest_prefers_recent_records() {
        let c = KeyChooser::new(&DistSpec::Latest { theta: 0.99 }, 1000, 1);
        let mut r = Rng::new(5);
        let recent = (0..10_000)
            .filter(|_| {
                let i = c.sample(&mut r, 2000);
                assert!(i < 2000);
                i >= 1990
            })
            .count();
        assert!(recent > 2500, "{recent}");
    }

    #[test]
    fn schedules_parse_and_switch() {
        let s = Schedule::parse("0=uniform, 10s=hotspot:0.01, 1m=hotspot:0.05@0.5", None).unwrap();
        assert_eq!(s.stages.len(), 3);
        assert_eq!(s.stages[2].at_secs, 60.0);
        let c = s.choosers(1000, 1);
        assert_eq!(c.stage(0.0), 0);
        assert_eq!(c.stage(9.9), 0);
        assert_eq!(c.stage(10.0), 1);
        assert_eq!(c.stage(1e9), 2);
        assert!(Schedule::parse("5=uniform", None).is_err());
        assert!(Schedule::parse("0=uniform,5=zipfian,5=uniform", None).is_err());
        assert!(Schedule::parse("hotrap", None).is_err());
        let h = Schedule::parse("hotrap", Some(Duration::from_secs(70))).unwrap();
        assert_eq!(h.stages.len(), 7);
        assert_eq!(h.stages[3].at_secs, 30.0);
        // The hotspot moves: stage 4's hot records are not stage 3's.
        let c = h.choosers(1000, 1);
        assert!(c.chooser(3).is_hot(0) && !c.chooser(4).is_hot(0));
        assert!(c.chooser(4).is_hot(500));
    }
}
