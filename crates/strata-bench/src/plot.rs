//! `--plot PATH.png`: three stacked panels over the run's time axis — throughput (ops/s),
//! latency (p50 and p99, log scale) and the fast-tier hit rate — with phase boundaries and
//! distribution stage changes marked. Drawn with `plotters`' bitmap backend and a font
//! embedded in the binary (a subset of DejaVu Sans, `assets/`), so it needs no system fonts.
//!
//! Invariants: only reads a [`BenchReport`]; an empty series draws an empty panel, never
//! fails; samples shorter than a tenth of a second (the tail of a phase) are left out of the
//! rates, where they would be noise. Depends on `results` only.

use std::path::Path;
use std::sync::Once;

use anyhow::Context;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::results::{BenchReport, PhaseResult};
use crate::workloads::PhaseRole;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

const WIDTH: u32 = 1600;
const HEIGHT: u32 = 1100;
const MIN_INTERVAL: f64 = 0.1;

/// Points per phase (one line each, so phases are not joined): (seconds since the run
/// started, value).
struct Series {
    ops: Vec<Vec<(f64, f64)>>,
    p50: Vec<Vec<(f64, f64)>>,
    p99: Vec<Vec<(f64, f64)>>,
    hit: Vec<Vec<(f64, f64)>>,
    /// (time, label) of phase starts and of distribution stage changes.
    phases: Vec<(f64, String)>,
    stages: Vec<(f64, String)>,
    t_max: f64,
}

/// The phases a plot shows: a workload's run phase (its load phase runs at another scale and
/// is in the text report), or every db_bench benchmark.
fn plotted(r: &BenchReport) -> Vec<&PhaseResult> {
    if r.phases.iter().any(|p| p.role == PhaseRole::Run) {
        r.phases
            .iter()
            .filter(|p| p.role == PhaseRole::Run)
            .collect()
    } else {
        r.phases.iter().collect()
    }
}

fn series(r: &BenchReport) -> Series {
    let phases = plotted(r);
    let origin = phases.first().map_or(0.0, |p| p.start_secs);
    let mut s = Series {
        ops: vec![],
        p50: vec![],
        p99: vec![],
        hit: vec![],
        phases: vec![],
        stages: vec![],
        t_max: 1.0,
    };
    for p in phases {
        let start = p.start_secs - origin;
        s.phases.push((start, p.name.clone()));
        if p.stages.len() > 1 {
            for (at, d) in &p.stages {
                s.stages.push((start + at, d.clone()));
            }
        }
        let (mut ops, mut p50, mut p99, mut hit) = (vec![], vec![], vec![], vec![]);
        for x in &p.timeseries {
            let t = start + x.t;
            s.t_max = s.t_max.max(t);
            if x.interval_secs < MIN_INTERVAL {
                continue;
            }
            ops.push((t, x.ops_per_sec));
            if x.p50_us > 0.0 {
                p50.push((t, x.p50_us));
                p99.push((t, x.p99_us));
            }
            if let Some(h) = x.fast_hit_rate {
                hit.push((t, h * 100.0));
            }
        }
        s.ops.push(ops);
        s.p50.push(p50);
        s.p99.push(p99);
        s.hit.push(hit);
        s.t_max = s.t_max.max(start + p.elapsed_secs);
    }
    s
}

fn all(v: &[Vec<(f64, f64)>]) -> impl Iterator<Item = f64> + '_ {
    v.iter().flatten().map(|p| p.1)
}

/// Draws one line per phase (with dots when a phase has few points), labelled once.
fn lines<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<DB, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>,
    segments: &[Vec<(f64, f64)>],
    color: RGBColor,
    label: Option<&str>,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    let mut labelled = false;
    for seg in segments.iter().filter(|s| !s.is_empty()) {
        let a = chart.draw_series(LineSeries::new(seg.iter().copied(), color.stroke_width(2)))?;
        if let (Some(l), false) = (label, labelled) {
            a.label(l).legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 20, y)], color.stroke_width(3))
            });
            labelled = true;
        }
        if seg.len() <= 30 {
            chart.draw_series(seg.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
    }
    Ok(())
}

/// A short title: engine, phases, records and threads.
pub fn title(r: &BenchReport) -> String {
    let a = &r.args;
    let what = match a.workload {
        Some(w) => {
            let stages = r
                .phases
                .iter()
                .find(|p| p.role == PhaseRole::Run)
                .map(|p| p.stages.clone())
                .unwrap_or_default();
            match stages.as_slice() {
                [(_, only)] => format!("{} ({only})", w.name()),
                [] => w.name().to_string(),
                many => format!("{} ({} key distributions over time)", w.name(), many.len()),
            }
        }
        None if r.phases.len() > 4 => format!("{} benchmarks", r.phases.len()),
        None => r
            .phases
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    format!(
        "{}: {what}; {} records of {}+{} B; {} threads",
        r.engine.name(),
        a.num,
        a.key_size,
        a.value_size,
        a.threads
    )
}

/// A second line: tiers, memory and machine.
fn subtitle(r: &BenchReport) -> String {
    let a = &r.args;
    let tiers = match &a.capacity {
        Some(c) => format!(
            "capacity {c} ({} ms/request{}), {}, HotRAP {}",
            a.capacity_latency_ms,
            a.capacity_mbps
                .map(|m| format!(", {m} MB/s"))
                .unwrap_or_default(),
            match a.fast_levels {
                Some(k) => format!("fast levels 0..={k}"),
                None => format!("last {} level(s) on capacity", a.capacity_levels),
            },
            if a.hotrap { "on" } else { "off" }
        ),
        None => "one tier".to_string(),
    };
    let load = r
        .phases
        .iter()
        .find(|p| p.role == PhaseRole::Load)
        .map(|p| format!("load {:.0} ops/s; ", p.ops_per_sec))
        .unwrap_or_default();
    format!(
        "{load}{tiers}; block cache {}; {} cpus {}; commit {}",
        crate::report::human_bytes(a.cache_size),
        r.machine.cpus,
        r.machine.cpu_model.as_deref().unwrap_or(""),
        r.commit.as_deref().unwrap_or("unknown")
    )
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let e = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if v <= m * e {
            return m * e;
        }
    }
    10.0 * e
}

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn us(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.0}s", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}ms", v / 1e3)
    } else if v >= 1.0 {
        format!("{v:.0}us")
    } else {
        format!("{v:.1}us")
    }
}

const OPS_COLOR: RGBColor = RGBColor(31, 119, 180);
const P99_COLOR: RGBColor = RGBColor(214, 39, 40);
const P50_COLOR: RGBColor = RGBColor(255, 152, 150);
const HIT_COLOR: RGBColor = RGBColor(44, 160, 44);
const PHASE_COLOR: RGBColor = RGBColor(90, 90, 90);
const STAGE_COLOR: RGBColor = RGBColor(148, 103, 189);

type Linear =
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>;

/// Marks phase starts (solid grey) and stage changes (dashed purple), with labels.
fn markers<DB: DrawingBackend>(
    chart: &mut ChartContext<DB, Linear>,
    s: &Series,
    y0: f64,
    y1: f64,
    label_y: f64,
    labels: bool,
) -> anyhow::Result<()>
where
    DB::ErrorType: 'static,
{
    for (i, (t, name)) in s.phases.iter().enumerate() {
        chart.draw_series(LineSeries::new(
            [(*t, y0), (*t, y1)],
            PHASE_COLOR.stroke_width(1),
        ))?;
        if labels {
            // Alternate heights so the names of short phases do not overlap.
            let y = if i % 2 == 0 { label_y } else { label_y * 0.9 };
            chart.draw_series(std::iter::once(Text::new(
                format!(" {name}"),
                (*t, y),
                ("sans-serif", 16).into_font().color(&PHASE_COLOR),
            )))?;
        }
    }
    for (t, d) in &s.stages {
        chart.draw_series(DashedLineSeries::new(
            [(*t, y0), (*t, y1)],
            6,
            4,
            STAGE_COLOR.stroke_width(2),
        ))?;
        if labels {
            chart.draw_series(std::iter::once(Text::new(
                format!(" {d}"),
                (*t, label_y * 0.8),
                ("sans-serif", 14).into_font().color(&STAGE_COLOR),
            )))?;
        }
    }
    Ok(())
}

/// Draws the plot of `r` into `path` (PNG).
pub fn draw(r: &BenchReport, path: &Path) -> anyhow::Result<()> {
    register_font();
    let s = series(r);
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, body) = root.split_vertically(80);
    head.draw(&Text::new(
        title(r),
        (20, 12),
        ("sans-serif", 30).into_font().color(&BLACK),
    ))?;
    head.draw(&Text::new(
        subtitle(r),
        (20, 50),
        ("sans-serif", 18).into_font().color(&PHASE_COLOR),
    ))?;
    let panels = body.split_evenly((3, 1));
    let x = 0f64..s.t_max * 1.02;

    // 1. Throughput.
    let y_ops = nice_max(all(&s.ops).fold(0.0, f64::max) * 1.25);
    let mut c = ChartBuilder::on(&panels[0])
        .margin(12)
        .margin_left(20)
        .caption("throughput", ("sans-serif", 22))
        .x_label_area_size(30)
        .y_label_area_size(80)
        .build_cartesian_2d(x.clone(), 0f64..y_ops)?;
    c.configure_mesh()
        .y_desc("ops/s")
        .y_label_formatter(&|v| si(*v))
        .x_label_formatter(&|v| format!("{v:.0}s"))
        .light_line_style(WHITE.mix(0.0))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    markers(&mut c, &s, 0.0, y_ops, y_ops * 0.97, true)?;
    lines(&mut c, &s.ops, OPS_COLOR, Some("ops/s"))?;
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK.mix(0.3))
        .background_style(WHITE.mix(0.9))
        .label_font(("sans-serif", 15))
        .draw()?;

    // 2. Latency, log scale.
    let lat_max = all(&s.p99).fold(1.0, f64::max);
    let lat_min = all(&s.p50).fold(f64::INFINITY, f64::min).min(lat_max);
    let (lo, hi) = if lat_min.is_finite() {
        (
            10f64.powf((lat_min.max(0.01)).log10().floor()),
            10f64.powf(lat_max.log10().ceil()).max(lat_max * 1.5),
        )
    } else {
        (1.0, 1000.0)
    };
    let mut c = ChartBuilder::on(&panels[1])
        .margin(12)
        .margin_left(20)
        .caption("latency (all operations)", ("sans-serif", 22))
        .x_label_area_size(30)
        .y_label_area_size(80)
        .build_cartesian_2d(x.clone(), (lo..hi).log_scale())?;
    c.configure_mesh()
        .y_desc("latency")
        .y_label_formatter(&|v| us(*v))
        .x_label_formatter(&|v| format!("{v:.0}s"))
        .light_line_style(WHITE.mix(0.0))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    for (t, _) in &s.phases {
        c.draw_series(LineSeries::new(
            [(*t, lo), (*t, hi)],
            PHASE_COLOR.stroke_width(1),
        ))?;
    }
    for (t, _) in &s.stages {
        c.draw_series(DashedLineSeries::new(
            [(*t, lo), (*t, hi)],
            6,
            4,
            STAGE_COLOR.stroke_width(2),
        ))?;
    }
    lines(&mut c, &s.p50, P50_COLOR, Some("p50"))?;
    lines(&mut c, &s.p99, P99_COLOR, Some("p99"))?;
    c.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .border_style(BLACK.mix(0.3))
        .background_style(WHITE.mix(0.9))
        .label_font(("sans-serif", 15))
        .draw()?;

    // 3. Fast-tier hit rate.
    let mut c = ChartBuilder::on(&panels[2])
        .margin(12)
        .margin_left(20)
        .caption(
            "fast-tier hit rate (block reads served locally)",
            ("sans-serif", 22),
        )
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x, 0f64..105f64)?;
    c.configure_mesh()
        .y_desc("hit rate")
        .x_desc(if r.phases.iter().any(|p| p.role == PhaseRole::Run) {
            "time since the start of the run phase"
        } else {
            "time since the start of the first benchmark"
        })
        .y_label_formatter(&|v| format!("{v:.0}%"))
        .x_label_formatter(&|v| format!("{v:.0}s"))
        .light_line_style(WHITE.mix(0.0))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    markers(&mut c, &s, 0.0, 105.0, 100.0, false)?;
    lines(&mut c, &s.hit, HIT_COLOR, None)?;
    if s.hit.iter().all(|h| h.is_empty()) {
        c.draw_series(std::iter::once(Text::new(
            "no table block reads (or not counted by this engine)",
            (s.t_max * 0.3, 50.0),
            ("sans-serif", 18).into_font().color(&PHASE_COLOR),
        )))?;
    }
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}
