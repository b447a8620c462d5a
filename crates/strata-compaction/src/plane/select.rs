//! Worker choice (CaaS-LSM §4.3.2, "CSA Selection and Distribution", Algorithm 1): skip
//! workers above 80% CPU or memory, take the one with the most free resources, and check it
//! against the job's estimated need; "lack of resources" goes back to the instance, while a
//! job whose eligible workers are merely all busy stays queued — and so does a job marked
//! `wait_for_worker` (sent remote because remote is the faster side) while the workers are
//! above the CPU limit but not the memory one: CPU use falls when their jobs end, the
//! host's memory use need not. Pure.

use crate::proto::ControlMetadata;

/// Utilization above which a worker takes no new job.
pub const MAX_UTILIZATION: f64 = 0.80;

/// What the scheduler knows of one worker.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerView {
    pub id: String,
    pub cpu: f64,
    pub memory: f64,
    pub memory_free: u64,
    pub disk_free: u64,
    pub slots: u32,
    pub running: u32,
}

impl WorkerView {
    fn free_slots(&self) -> u32 {
        self.slots.saturating_sub(self.running)
    }

    /// "Most available resources": idle CPU and memory, and the share of idle slots.
    fn free_score(&self) -> f64 {
        (1.0 - self.cpu) + (1.0 - self.memory) + self.free_slots() as f64 / self.slots.max(1) as f64
    }
}

/// A job's estimated resource need.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Need {
    pub memory: u64,
    pub disk: u64,
    /// Waits in the queue while the workers are above [`MAX_UTILIZATION`] CPU (but not
    /// memory) rather than go back (`ControlMetadata::wait_for_worker`).
    pub wait_for_worker: bool,
}

/// Estimated from the inputs: table readers and blocks in memory; staging space on disk for
/// outputs as large as the inputs.
pub fn need_of(m: &ControlMetadata) -> Need {
    Need {
        memory: (32 << 20) + m.input_files as u64 * (256 << 10),
        disk: m.input_bytes,
        wait_for_worker: m.wait_for_worker,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// Index into the views.
    Worker(usize),
    /// Eligible workers exist but none has a free slot: keep the job queued.
    Busy,
    /// Send the job back to its instance.
    LackOfResources(String),
}

/// Chooses a worker for a job needing `need`, never one of `excluded` (workers a solvable
/// failure or a loss moved the job away from); `preferred` (a retriable failure's worker)
/// is taken when it has a free slot.
pub fn choose(
    workers: &[WorkerView],
    need: Need,
    excluded: &[String],
    preferred: Option<&str>,
) -> Choice {
    if let Some(p) = preferred {
        if let Some(i) = workers.iter().position(|w| w.id == p) {
            if workers[i].free_slots() > 0 {
                return Choice::Worker(i);
            }
            return Choice::Busy;
        }
    }
    let candidates: Vec<usize> = (0..workers.len())
        .filter(|&i| !excluded.contains(&workers[i].id))
        .collect();
    if candidates.is_empty() {
        return Choice::LackOfResources(if workers.is_empty() {
            "no compaction workers are registered".into()
        } else {
            "every worker already failed this job".into()
        });
    }
    let healthy: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|&i| workers[i].cpu <= MAX_UTILIZATION && workers[i].memory <= MAX_UTILIZATION)
        .collect();
    if healthy.is_empty() {
        let cpu_bound = |i: &usize| workers[*i].memory <= MAX_UTILIZATION;
        if need.wait_for_worker && candidates.iter().any(cpu_bound) {
            return Choice::Busy;
        }
        return Choice::LackOfResources("every worker is above 80% CPU or memory".into());
    }
    let Some(best) = healthy
        .into_iter()
        .filter(|&i| workers[i].free_slots() > 0)
        .max_by(|&a, &b| workers[a].free_score().total_cmp(&workers[b].free_score()))
    else {
        return Choice::Busy;
    };
    let w = &workers[best];
    if w.memory_free < need.memory || w.disk_free < need.disk {
        return Choice::LackOfResources(format!(
            "worker {} has {} MiB memory and {} MiB disk free; the job needs {} and {}",
            w.id,
            w.memory_free >> 20,
            w.disk_free >> 20,
            need.memory >> 20,
            need.disk >> 20
        ));
    }
    Choice::Worker(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(id: &str, cpu: f64, memory: f64, slots: u32, running: u32) -> WorkerView {
        WorkerView {
            id: id.into(),
            cpu,
            memory,
            memory_free: 8 << 30,
            disk_free: 100 << 30,
            slots,
            running,
        }
    }

    const NEED: Need = Need {
        memory: 64 << 20,
        disk: 1 << 30,
        wait_for_worker: false,
    };

    #[test]
    fn choices() {
        let lack = |s: &str| Choice::LackOfResources(s.into());
        let mut poor = w("poor", 0.1, 0.1, 1, 0);
        poor.memory_free = 1 << 20;
        // (workers, excluded, preferred, expected)
        type Case<'a> = (Vec<WorkerView>, Vec<&'a str>, Option<&'a str>, Choice);
        let cases: Vec<Case> = vec![
            (
                vec![],
                vec![],
                None,
                lack("no compaction workers are registered"),
            ),
            (
                vec![w("a", 0.9, 0.1, 2, 0), w("b", 0.1, 0.85, 2, 0)],
                vec![],
                None,
                lack("every worker is above 80% CPU or memory"),
            ),
            // The most free resources wins among the healthy.
            (
                vec![
                    w("a", 0.5, 0.5, 2, 0),
                    w("b", 0.3, 0.3, 2, 1),
                    w("c", 0.9, 0.0, 4, 0),
                ],
                vec![],
                None,
                Choice::Worker(0),
            ),
            (
                vec![w("a", 0.5, 0.5, 2, 0), w("b", 0.1, 0.1, 2, 0)],
                vec![],
                None,
                Choice::Worker(1),
            ),
            // Healthy but full: queue.
            (vec![w("a", 0.5, 0.5, 1, 1)], vec![], None, Choice::Busy),
            // Exclusions after solvable failures.
            (
                vec![w("a", 0.1, 0.1, 2, 0), w("b", 0.5, 0.5, 2, 0)],
                vec!["a"],
                None,
                Choice::Worker(1),
            ),
            (
                vec![w("a", 0.1, 0.1, 2, 0)],
                vec!["a"],
                None,
                lack("every worker already failed this job"),
            ),
            // A retriable failure goes back to its worker, even if another is freer.
            (
                vec![w("a", 0.7, 0.7, 2, 1), w("b", 0.0, 0.0, 2, 0)],
                vec![],
                Some("a"),
                Choice::Worker(0),
            ),
            (
                vec![w("a", 0.7, 0.7, 1, 1), w("b", 0.0, 0.0, 2, 0)],
                vec![],
                Some("a"),
                Choice::Busy,
            ),
            // The preferred worker is gone: choose normally.
            (
                vec![w("b", 0.0, 0.0, 2, 0)],
                vec![],
                Some("a"),
                Choice::Worker(0),
            ),
        ];
        for (i, (workers, excluded, preferred, want)) in cases.into_iter().enumerate() {
            let ex: Vec<String> = excluded.iter().map(|s| s.to_string()).collect();
            assert_eq!(choose(&workers, NEED, &ex, preferred), want, "case {i}");
        }
        match choose(&[poor.clone()], NEED, &[], None) {
            Choice::LackOfResources(m) => assert!(m.contains("memory"), "{m}"),
            c => panic!("{c:?}"),
        }
        // A job marked wait_for_worker waits out workers busy on CPU, but not host memory
        // above the limit, a lack of free memory or disk, of workers, or of workers that have
        // not failed it.
        let patient = Need {
            wait_for_worker: true,
            ..NEED
        };
        let hot = [w("a", 0.95, 0.1, 2, 1), w("b", 0.1, 0.9, 2, 0)];
        assert_eq!(choose(&hot, patient, &[], None), Choice::Busy);
        assert!(matches!(
            choose(&hot[1..], patient, &[], None),
            Choice::LackOfResources(_)
        ));
        assert!(matches!(
            choose(&[poor], patient, &[], None),
            Choice::LackOfResources(_)
        ));
        assert!(matches!(
            choose(&[], patient, &[], None),
            Choice::LackOfResources(_)
        ));
        let ex = vec!["a".to_string()];
        assert!(matches!(
            choose(&[w("a", 0.1, 0.1, 2, 0)], patient, &ex, None),
            Choice::LackOfResources(_)
        ));
    }
}
