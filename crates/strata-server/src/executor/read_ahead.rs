//! Reading a segment's GET and MGET keys ahead, with one engine `multi_get`, when no earlier
//! command of the segment could then see a newer state than a GET answered from the read-ahead
//! ([`read_ahead_safe`]), and hinting the engine at the keys the other commands will read.
//! Invariant: a GET answered from the read-ahead answers as of a moment between its request's
//! arrival and its reply, no earlier than any earlier command of its segment read. Depends on
//! `commands` (requests, `Pending`), `server::Shared`, `keyspace`, `stats`.

use bytes::Bytes;

use crate::commands::{LockScope, Pending, Request};
use crate::server::Shared;
use crate::stats::ServerStats;

/// Commands in a segment from which their keys are prefetched.
pub(super) const PREFETCH_MIN: usize = 4;
/// Keys prefetched at most per segment.
const PREFETCH_MAX: usize = 64;

/// Whether the keys of `cmds`' GETs and MGETs may be read when the segment starts (after its
/// stripes are locked) instead of when each command runs. Commands run in order, so a GET must
/// not answer from an older state than an earlier command of the segment saw: that holds when
/// every other engine command reads only keys whose stripes the segment holds (its writes:
/// nobody else can change those between the read-ahead and their own read).
pub(crate) fn read_ahead_safe(cmds: &[Request]) -> bool {
    cmds.iter().all(|req| match req.spec() {
        None => true,
        Some(spec) if !spec.engine || req.reads_ahead() => true,
        Some(spec) => match req.lock_scope() {
            LockScope::All => true,
            LockScope::None => false,
            LockScope::Keys(locked) => spec.table_keys(req).all(|k| locked.contains(&k)),
        },
    })
}

/// Reads the data keys of `cmds`' GETs and MGETs with one [`strata::Db::multi_get`] into
/// `pending.reads` (in command order, where `Ctx::raw` and `Ctx::raw_many` find them) when
/// [`read_ahead_safe`] says so — whole commands, at most [`PREFETCH_MAX`] keys: returns the
/// index of the first GET or MGET left out, before which the caller closes the read-ahead
/// (`ReadAhead::close`); hints the engine ([`strata::Db::prefetch_gets`]) at the data keys of
/// the other engine commands that read them (not blind writes such as a plain SET) and at the
/// keys scripts declare, and at the GETs' when they are not read ahead. A GET answered from the read-ahead answers as of a
/// moment between its request's arrival and its reply, no earlier than any earlier command of
/// the segment read; a read-modify-write of a key some GET read ahead reads that value, which
/// is current, since the segment held the key's stripe before reading it. A read-ahead that
/// would need I/O inline (`Incomplete`) reads nothing ahead: each command then reads for
/// itself. The engine counts a read-ahead key as a lookup even when a later write of the
/// segment shadows it, and a key two GETs name twice.
pub(super) fn prefetch_keys(
    shared: &Shared,
    cmds: &[Request],
    pending: &mut Pending,
) -> Option<usize> {
    // The engine keys side by side in one buffer: one allocation per segment, not per key.
    let mut buf = Vec::new();
    let mut ends = Vec::with_capacity(PREFETCH_MAX.min(cmds.len()));
    let mut push = |k: &Bytes| {
        crate::keyspace::push_data_key(&mut buf, k);
        ends.push(buf.len());
    };
    // Keys [0, ahead.len()) are read ahead: those of whole GETs and MGETs in command order, up
    // to the first whose keys do not all fit in PREFETCH_MAX (`cut`, its index in `cmds`).
    let mut ahead: Vec<Bytes> = Vec::new();
    let mut cut = None;
    if read_ahead_safe(cmds) {
        let gets = cmds.iter().enumerate().filter(|(_, r)| r.reads_ahead());
        for (i, (req, spec)) in gets.filter_map(|(i, r)| Some((i, (r, r.spec()?)))) {
            if ahead.len() + spec.table_keys(req).count() > PREFETCH_MAX {
                cut = Some(i);
                break;
            }
            for k in spec.table_keys(req) {
                push(k);
                ahead.push(k.clone());
            }
        }
    }
    // The rest are hints: the keys of the other engine commands that read them, and of the
    // GETs and MGETs not read ahead (those from `cut` on, or all if none was).
    let read_ahead = ahead.len();
    let read_through = if read_ahead == 0 {
        0
    } else {
        cut.unwrap_or(cmds.len())
    };
    let mut room = PREFETCH_MAX.saturating_sub(read_ahead);
    for (i, r) in cmds.iter().enumerate() {
        if room == 0 {
            break;
        }
        let Some(spec) = r.spec() else { continue };
        if !r.needs_engine() || r.blind_write() || (r.reads_ahead() && i < read_through) {
            continue;
        }
        if spec.runs_script() {
            // A script's declared keys (what a script reads, mostly), sliced from its
            // arguments: no vector per script.
            let args = r.args();
            let parsed = (args.len() >= 3).then(|| crate::commands::scripting::keys_and_args(args));
            if let Some(Ok((keys, _))) = parsed {
                for k in keys.iter().take(room) {
                    push(k);
                    room -= 1;
                }
            }
        } else {
            for k in spec.table_keys(r).take(room) {
                push(k);
                room -= 1;
            }
        }
    }
    let mut start = 0;
    let keys: Vec<&[u8]> = ends
        .iter()
        .map(|&end| {
            let k = &buf[start..end];
            start = end;
            k
        })
        .collect();
    let db = &shared.store;
    let (read, hints) = keys.split_at(read_ahead);
    if read.len() >= 2 {
        let opts = strata::ReadOptions {
            cache_only: pending.inline,
            ..Default::default()
        };
        // All or nothing: with some keys read ahead and others read later, a later GET could
        // answer from an older state than an earlier one. A failed key (Incomplete inline) is
        // met again by its command's own read.
        let got: Result<Vec<_>, _> = db.multi_get(&opts, read).into_iter().collect();
        db.prefetch_gets(hints);
        if let Ok(got) = got {
            ServerStats::add(&shared.stats.read_ahead_keys, got.len() as u64);
            pending.reads.fill(ahead, got);
            return cut;
        }
    } else {
        db.prefetch_gets(&keys);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmds(v: &[&[&str]]) -> Vec<Request> {
        v.iter().map(|c| Request::of(c)).collect()
    }

    /// GETs are read ahead only when no other command of the segment reads a key it does not
    /// hold: such a read happens later, and a GET after it must not answer from before it.
    #[test]
    fn reads_ahead_only_where_no_earlier_read_can_be_newer() {
        let safe = |v: &[&[&str]]| read_ahead_safe(&cmds(v));
        assert!(safe(&[&["GET", "a"], &["GET", "b"], &["MGET", "c", "d"]]));
        // Writes read their keys under their stripes, held since before the read-ahead.
        assert!(safe(&[
            &["GET", "n"],
            &["INCR", "n"],
            &["SET", "a", "1"],
            &["APPEND", "b", "x"],
            &["GET", "a"]
        ]));
        assert!(safe(&[
            &["PING"],
            &["GET", "a"],
            &["NOSUCHCOMMAND"],
            &["GET", "b"]
        ]));
        // Pure reads of keys the segment does not hold read the engine when they run.
        for read in [
            &["EXISTS", "x"][..],
            &["TTL", "x"],
            &["STRLEN", "x"],
            &["TYPE", "x"],
            &["GETRANGE", "x", "0", "1"],
        ] {
            assert!(!safe(&[read, &["GET", "a"], &["GET", "b"]]), "{read:?}");
        }
    }
}
