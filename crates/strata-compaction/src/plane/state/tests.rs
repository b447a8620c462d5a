//! The control plane's lifecycle, driven with an explicit clock.

use std::time::{Duration, Instant};

use super::*;
use crate::proto::{complete_request::Outcome as Done, Failure as WireFailure};

fn meta(levels: &[u32], score: f64) -> ControlMetadata {
    ControlMetadata {
        instance: "db".into(),
        input_levels: levels.to_vec(),
        score,
        input_bytes: 1 << 20,
        input_files: 2,
        ..Default::default()
    }
}

fn idle() -> Resources {
    Resources {
        cpu: 0.1,
        memory: 0.2,
        memory_free_bytes: 8 << 30,
        disk_free_bytes: 100 << 30,
        ..Default::default()
    }
}

fn state(p: &Plane, id: u64) -> JobState {
    JobState::try_from(p.poll(id).0.state).unwrap()
}

fn fail(class: FailureClass) -> Done {
    Done::Failure(WireFailure {
        class: class as i32,
        message: "boom".into(),
    })
}

/// The job ids and attempts in `w`'s outbox.
fn fetched(p: &mut Plane, w: &str, now: Instant) -> Vec<(u64, u32)> {
    p.fetch(w, now)
        .unwrap()
        .0
        .iter()
        .map(|a| (a.job_id, a.attempt))
        .collect()
}

#[test]
fn without_workers_jobs_go_back() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    assert!(p.submit(meta(&[0, 1], 1.0), vec![], now).is_err());
    assert_eq!(p.status(now).counters.unwrap().use_local, 1);
}

#[test]
fn a_job_runs_once_and_its_answer_is_kept() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let w = p.register("a".into(), 1, idle(), now);
    let j = p.submit(meta(&[0, 1], 1.0), b"job".to_vec(), now).unwrap();
    assert_eq!(state(&p, j), JobState::Pending);
    assert_eq!(p.dispatch(now + Duration::from_millis(5)).len(), 1);
    assert_eq!(fetched(&mut p, &w, now), vec![(j, 0)]);
    // A second job waits: the only slot is taken.
    let j2 = p.submit(meta(&[0, 1], 1.0), b"job2".to_vec(), now).unwrap();
    assert!(p.dispatch(now).is_empty());
    assert_eq!(p.status(now).queue.len(), 1);
    // A completion from anyone else, or for another attempt, is refused.
    assert!(!p.complete("w9", j, 0, Done::Result(b"r".to_vec()), now));
    assert!(!p.complete(&w, j, 1, Done::Result(b"r".to_vec()), now));
    assert!(p.complete(&w, j, 0, Done::Result(b"r".to_vec()), now));
    let (r, _) = p.poll(j);
    assert_eq!(JobState::try_from(r.state).unwrap(), JobState::Done);
    assert_eq!(r.result, b"r");
    assert!(r.queue_wait_micros >= 5000, "{r:?}");
    // A repeated report (its first reply was lost) is accepted and changes nothing; asking
    // twice gives the same answer.
    assert!(p.complete(&w, j, 0, Done::Result(b"x".to_vec()), now));
    assert_eq!(p.poll(j).0.result, b"r");
    // The slot is free again.
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &w, now), vec![(j2, 0)]);
    // Finished answers are forgotten after the retention.
    p.monitor(now + Duration::from_secs(61));
    assert_eq!(state(&p, j), JobState::Unknown);
}

#[test]
fn failure_classes() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let a = p.register("a".into(), 2, idle(), now);
    let b = p.register("b".into(), 2, Resources { cpu: 0.5, ..idle() }, now);
    // Retriable: the same worker once, then another worker.
    let j = p.submit(meta(&[1, 2], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
    assert!(p.complete(&a, j, 0, fail(FailureClass::Retriable), now));
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 1)]);
    assert!(p.complete(&a, j, 1, fail(FailureClass::Retriable), now));
    p.dispatch(now);
    assert_eq!(
        fetched(&mut p, &b, now),
        vec![(j, 2)],
        "retries exhausted: another worker"
    );
    assert!(p.complete(&b, j, 2, Done::Result(vec![1]), now));
    let r = p.poll(j).0;
    assert_eq!((r.retriable, r.solvable, r.attempt), (2, 0, 2));

    // Solvable: another worker at once; when none is left, back to the instance.
    let j = p.submit(meta(&[1, 2], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
    assert!(p.complete(&a, j, 0, fail(FailureClass::Solvable), now));
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &b, now), vec![(j, 1)]);
    assert!(p.complete(&b, j, 1, fail(FailureClass::Solvable), now));
    p.dispatch(now);
    assert_eq!(state(&p, j), JobState::UseLocal);

    // Fatal: straight back to the instance.
    let j = p.submit(meta(&[1, 2], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
    assert!(p.complete(&a, j, 0, fail(FailureClass::Fatal), now));
    let r = p.poll(j).0;
    assert_eq!(JobState::try_from(r.state).unwrap(), JobState::Failed);
    assert_eq!(r.failure, FailureClass::Fatal as i32);
}

#[test]
fn lost_workers_jobs_go_first_to_others() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let a = p.register("a".into(), 1, idle(), t0);
    let b = p.register("b".into(), 1, Resources { cpu: 0.6, ..idle() }, t0);
    let j1 = p.submit(meta(&[5, 6], 0.1), vec![], t0).unwrap();
    p.dispatch(t0);
    assert_eq!(fetched(&mut p, &a, t0), vec![(j1, 0)]);
    let j2 = p.submit(meta(&[0, 1], 9.0), vec![], t0).unwrap();
    p.dispatch(t0);
    assert_eq!(fetched(&mut p, &b, t0), vec![(j2, 0)]);
    // A queued job of higher priority than j1's.
    let j3 = p.submit(meta(&[0, 1], 5.0), vec![], t0).unwrap();
    // b keeps beating, a falls silent.
    assert!(p
        .heartbeat(&b, idle(), &[(j2, 0)], t0 + ms(1000))
        .unwrap()
        .is_empty());
    p.monitor(t0 + ms(1400));
    assert_eq!(p.status(t0).workers.len(), 2, "not lost before the timeout");
    p.monitor(t0 + ms(1600));
    assert_eq!(p.status(t0).workers.len(), 1);
    assert!(p.complete(&b, j2, 0, Done::Result(vec![]), t0 + ms(1600)));
    p.dispatch(t0 + ms(1600));
    // The lost worker's job runs before the queued job of higher priority.
    assert_eq!(fetched(&mut p, &b, t0), vec![(j1, 1)]);
    // The lost worker comes back: it is unknown, and its late completion is refused.
    assert!(p.heartbeat(&a, idle(), &[(j1, 0)], t0 + ms(1700)).is_none());
    assert!(!p.complete(&a, j1, 0, Done::Result(vec![]), t0 + ms(1700)));
    assert!(p.complete(&b, j1, 1, Done::Result(vec![]), t0 + ms(1800)));
    assert_eq!(p.poll(j1).0.workers_lost, 1);
    p.dispatch(t0 + ms(1800));
    assert_eq!(fetched(&mut p, &b, t0), vec![(j3, 0)]);
    let c = p.status(t0).counters.unwrap();
    assert_eq!((c.workers_lost, c.stale_completions), (1, 1));
}

#[test]
fn cancelled_jobs_are_aborted_on_their_worker() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let a = p.register("a".into(), 1, idle(), now);
    let j = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
    p.cancel(j);
    assert_eq!(
        p.heartbeat(&a, idle(), &[(j, 0)], now).unwrap(),
        vec![(j, 0)]
    );
    assert!(!p.complete(&a, j, 0, Done::Result(vec![]), now));
    // A queued job is simply dropped.
    let _busy = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    let q = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.cancel(q);
    assert!(p.status(now).queue.is_empty());
    assert_eq!(state(&p, q), JobState::Unknown);
}

#[test]
fn overloaded_workers_send_jobs_back() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let a = p.register(
        "a".into(),
        4,
        Resources {
            cpu: 0.95,
            ..idle()
        },
        now,
    );
    let j = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(state(&p, j), JobState::UseLocal);
    // Once it cools down, jobs go to it again.
    p.heartbeat(&a, idle(), &[], now).unwrap();
    let j = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
}

#[test]
fn jobs_marked_wait_for_worker_wait_out_a_busy_worker() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let hot = Resources {
        cpu: 0.95,
        ..idle()
    };
    let a = p.register("a".into(), 2, hot, now);
    let patient = ControlMetadata {
        wait_for_worker: true,
        ..meta(&[5, 6], 1.0)
    };
    let j = p.submit(patient, vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(state(&p, j), JobState::Pending, "queued, not sent back");
    p.heartbeat(&a, hot, &[], now).unwrap();
    p.dispatch(now);
    assert_eq!(state(&p, j), JobState::Pending);
    // An unmarked job beside it (explored, or sent before remote was measured) is sent back
    // at once.
    let k = p.submit(meta(&[5, 6], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(state(&p, k), JobState::UseLocal);
    // The worker cools down: the waiting job goes to it.
    p.heartbeat(&a, idle(), &[], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
}

#[test]
fn a_busy_workers_finished_jobs_do_not_count_against_it() {
    let now = Instant::now();
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let a = p.register("a".into(), 1, idle(), now);
    let j = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(j, 0)]);
    // Its heartbeat reports 95% CPU while it runs the job.
    p.heartbeat(
        &a,
        Resources {
            cpu: 0.95,
            ..idle()
        },
        &[(j, 0)],
        now,
    )
    .unwrap();
    let k = p.submit(meta(&[0, 1], 1.0), vec![], now).unwrap();
    p.dispatch(now);
    assert_eq!(
        state(&p, k),
        JobState::Pending,
        "queued while the slot is taken"
    );
    // The job ends before the next heartbeat: the next job goes to it, not back.
    assert!(p.complete(&a, j, 0, Done::Result(vec![]), now));
    p.dispatch(now);
    assert_eq!(fetched(&mut p, &a, now), vec![(k, 0)]);
}

#[test]
fn a_lost_assignment_is_rescheduled_and_a_repeated_report_accepted() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut p = Plane::new(PlaneConfig::default(), 1);
    let a = p.register("a".into(), 1, idle(), t0);
    let b = p.register("b".into(), 1, Resources { cpu: 0.5, ..idle() }, t0);
    let j = p.submit(meta(&[0, 1], 1.0), vec![], t0).unwrap();
    p.dispatch(t0);
    // The fetch reply carrying the job never arrives: a keeps beating without it.
    assert_eq!(fetched(&mut p, &a, t0), vec![(j, 0)]);
    assert!(p
        .heartbeat(&a, idle(), &[], t0 + ms(1000))
        .unwrap()
        .is_empty());
    assert_eq!(
        p.heartbeat(&a, idle(), &[], t0 + ms(3100)).unwrap(),
        vec![(j, 0)]
    );
    p.heartbeat(&b, idle(), &[], t0 + ms(3100)).unwrap();
    p.dispatch(t0 + ms(3100));
    assert_eq!(fetched(&mut p, &b, t0), vec![(j, 1)]);
    // b's report is accepted; its retry of the same report (a lost reply) is accepted too,
    // and a stale report of attempt 0 is not.
    assert!(p.complete(&b, j, 1, Done::Result(vec![7]), t0 + ms(3200)));
    assert!(p.complete(&b, j, 1, Done::Result(vec![7]), t0 + ms(3300)));
    assert!(!p.complete(&a, j, 0, Done::Result(vec![7]), t0 + ms(3300)));
    assert_eq!(p.poll(j).0.solvable, 1);
}

#[test]
fn job_ids_do_not_repeat_across_runs() {
    let now = Instant::now();
    let mut first = Plane::new(PlaneConfig::default(), 1_000);
    let mut second = Plane::new(PlaneConfig::default(), 1_001);
    first.register("a".into(), 1, idle(), now);
    second.register("a".into(), 1, idle(), now);
    let a: Vec<u64> = (0..3)
        .map(|_| first.submit(meta(&[0], 1.0), vec![], now).unwrap())
        .collect();
    let b = second.submit(meta(&[0], 1.0), vec![], now).unwrap();
    assert!(!a.contains(&b));
    assert_eq!(second.poll(a[0]).0.state, JobState::Unknown as i32);
}
