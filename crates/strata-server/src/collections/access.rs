//! How command handlers read and change collections: typed lookup of a key's metadata
//! (WRONGTYPE for another type), element reads and ordered element scans straight from the
//! engine, element writes and the metadata update added to the segment's batch.
//!
//! Invariants: a handler changes a collection by loading a [`Coll`], adding element puts and
//! deletes, adjusting `meta.size` (and list bounds) to match, then calling [`Ctx::coll_save`]
//! once — which writes the metadata, or deletes the key when the size fell to 0 — so the
//! metadata and the elements are committed in one batch. Element point reads see the segment's
//! pending element writes first, then (for a segment chained on a hot key's stripe, see
//! `locks`) those of its commit group; ordered element scans merge the segment's own pending
//! element writes (only an EXEC has any: otherwise the executor runs every command that scans
//! in a segment of its own, see `CommandSpec::alone`, after earlier writes of the batch are
//! committed) over those of the group it chains on (if it chains on the key's stripe) over the
//! engine's, and an inline scan past
//! [`INLINE_SCAN_BUDGET`] elements reruns on the pool. Element keys longer than the engine's key limit
//! are refused with an error, never truncated. Must not depend on the network layer.
//! Depends on `commands::Ctx`, `collections::{meta, subkey}`, `value`, `store`, `commit_group`;
//! must not depend on the network layer or on any command family.

use bytes::Bytes;
use strata::ReadOptions;

use super::meta::{self, Meta};
use super::subkey;
use crate::commands::errors::{self, err};
use crate::commands::Ctx;
use crate::commit_group::Kind;
use crate::resp::Reply;
use crate::store::StoreError;
use crate::value::{DecodeError, ValueType};

/// Elements an inline scan visits before it gives up and reruns on the engine pool: a consumer
/// loop's reads stay inline, a whole-stream read does not hold the event loop.
const INLINE_SCAN_BUDGET: usize = 1_000;

/// The most elements a collection may hold.
pub const MAX_ELEMENTS: u64 = u32::MAX as u64;

/// A loaded (or new) collection.
#[derive(Clone, Debug)]
pub struct Coll {
    pub key: Vec<u8>,
    pub vtype: ValueType,
    pub expire_at: Option<u64>,
    pub meta: Meta,
}

fn corrupt(e: DecodeError) -> Reply {
    Reply::from(StoreError::from(e))
}

impl Ctx<'_> {
    /// The live collection at `key` if it has type `vtype`; `None` if the key is absent;
    /// WRONGTYPE if it holds another type.
    pub fn coll(&self, key: &[u8], vtype: ValueType) -> Result<Option<Coll>, Reply> {
        let Some(e) = self.entry(key)? else {
            return Ok(None);
        };
        if e.vtype != Some(vtype) {
            return Err(err(errors::WRONGTYPE));
        }
        let m = meta::decode(vtype, &e.payload).map_err(corrupt)?;
        Ok(Some(Coll {
            key: key.to_vec(),
            vtype,
            expire_at: e.expire_at,
            meta: m,
        }))
    }

    /// The collection at `key`, or a new empty one (fresh version) if the key is absent.
    pub fn coll_or_new(&self, key: &[u8], vtype: ValueType) -> Result<Coll, Reply> {
        Ok(match self.coll(key, vtype)? {
            Some(c) => c,
            None => Coll {
                key: key.to_vec(),
                vtype,
                expire_at: None,
                meta: Meta::fresh(vtype),
            },
        })
    }

    /// The value of one element, or `None`.
    pub fn elem_get(&self, c: &Coll, kind: u8, rest: &[u8]) -> Result<Option<Bytes>, Reply> {
        let k = subkey::element(&c.key, c.meta.version, kind, rest);
        match self.pending.elems.get(&k) {
            Some(v) => Ok(v.clone()),
            None if self.pending.has_ranges() => Ok(None),
            None => match self.group_get(Kind::Elem, &c.key, &k) {
                Some(v) => Ok(v),
                None => self.engine_get(&k),
            },
        }
    }

    /// Adds an element write to the segment.
    pub fn elem_put(&mut self, c: &Coll, kind: u8, rest: &[u8], value: &[u8]) -> Result<(), Reply> {
        if c.key.len() + rest.len() + subkey::OVERHEAD > strata::MAX_KEY_SIZE {
            return Err(Reply::error(format!(
                "ERR key and element together exceed {} bytes",
                strata::MAX_KEY_SIZE - subkey::OVERHEAD
            )));
        }
        let k = subkey::element(&c.key, c.meta.version, kind, rest);
        self.pending.batch.put(&k, value);
        self.pending
            .elems
            .insert(k, Some(Bytes::copy_from_slice(value)));
        Ok(())
    }

    /// Adds an element deletion to the segment.
    pub fn elem_del(&mut self, c: &Coll, kind: u8, rest: &[u8]) {
        let k = subkey::element(&c.key, c.meta.version, kind, rest);
        self.pending.batch.delete(&k);
        self.pending.elems.insert(k, None);
    }

    /// Writes `c`'s metadata (keeping its expiry), or deletes the key if it is empty (but a
    /// stream, which exists empty as in redis).
    pub fn coll_save(&mut self, c: &Coll) -> Result<(), Reply> {
        if c.meta.size == 0 && c.vtype != ValueType::Stream {
            self.delete(&c.key);
            return Ok(());
        }
        if c.meta.size > MAX_ELEMENTS {
            return Err(Reply::error(format!(
                "ERR a collection may hold at most {MAX_ELEMENTS} elements"
            )));
        }
        let payload = meta::encode(c.vtype, &c.meta);
        self.put(&c.key, c.vtype, c.expire_at, &payload)
    }

    /// Visits the elements of one kind in order (reverse order with `reverse`), starting at
    /// `rest` `from` (inclusive; for `reverse`, the last element `<= from`), until `visit`
    /// returns `false`. `visit` gets the element's `rest` and its value. Sees the segment's own
    /// element writes (those of earlier commands of an EXEC) merged over the engine's, and
    /// nothing of the engine's after a FLUSHDB of the segment.
    pub fn elems(
        &self,
        c: &Coll,
        kind: u8,
        reverse: bool,
        from: Option<&[u8]>,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<bool, Reply>,
    ) -> Result<(), Reply> {
        let prefix = subkey::prefix(&c.key, c.meta.version, kind);
        let end = subkey::prefix_end(&prefix);
        // Element writes not in the engine yet, from `from` on, in visiting order: those of
        // the commit group the segment chains on (if it chains on this collection's stripe:
        // an XREADGROUP behind another consumer's XACK must not see the acked entry pending),
        // shadowed by the segment's own (only an EXEC has any: a command that scans otherwise
        // runs in a segment of its own, see `CommandSpec::alone`).
        let group = self.group_elems_under(&c.key, &prefix);
        if self.pending.stale.get() {
            return Ok(()); // the group was taken: the segment is discarded
        }
        let in_range = |r: &[u8]| match from {
            None => true,
            Some(f) if reverse => r <= f,
            Some(f) => r >= f,
        };
        let mut unwritten: std::collections::BTreeMap<&[u8], &Option<Bytes>> = group
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(prefix.as_slice())?, v)))
            .filter(|(r, _)| in_range(r))
            .collect();
        unwritten.extend(
            self.pending
                .elems
                .iter()
                .filter_map(|(k, v)| Some((k.strip_prefix(prefix.as_slice())?, v)))
                .filter(|(r, _)| in_range(r)),
        );
        let mut mine: Vec<(&[u8], &Option<Bytes>)> = unwritten.into_iter().collect();
        if reverse {
            mine.reverse();
        }
        let mut mine = mine.into_iter().peekable();
        let mut it = if self.pending.has_ranges() {
            None
        } else {
            let mut it = self
                .store()
                .iter(ReadOptions {
                    lower_bound: Some(prefix.clone()),
                    upper_bound: Some(end),
                    // Inline, only cached blocks of open tables; anything else ends the
                    // iterator `Incomplete` and the segment reruns on the pool.
                    cache_only: self.pending.inline,
                    ..Default::default()
                })
                .map_err(|e| self.engine_error(e))?;
            match (reverse, from) {
                (false, None) => it.seek_to_first(),
                (true, None) => it.seek_to_last(),
                (false, Some(f)) => it.seek(&[&prefix[..], f].concat()),
                (true, Some(f)) => it.seek_for_prev(&[&prefix[..], f].concat()),
            }
            Some(it)
        };
        let mut visited = 0usize;
        loop {
            // Inline, a long scan (an XREAD without COUNT of a big stream) would hold the event
            // loop and every connection on it: past a budget the segment reruns on the pool.
            visited += 1;
            if self.pending.inline && visited > INLINE_SCAN_BUDGET {
                self.pending.would_block.set(true);
                return Ok(());
            }
            // Which comes next: the segment's element (`Less`), the engine's (`Greater`), or
            // the same element (`Equal`: the segment's write shadows the engine's).
            let engine = it
                .as_ref()
                .filter(|it| it.valid())
                .and_then(|it| it.key().get(prefix.len()..));
            let next = match (mine.peek(), engine) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some((m, _)), Some(e)) if reverse => e.cmp(m),
                (Some((m, _)), Some(e)) => m.cmp(&e),
            };
            let go_on = if next == std::cmp::Ordering::Greater {
                let Some(it) = it.as_ref() else { break };
                visit(&it.key()[prefix.len()..], it.value())?
            } else {
                let Some((rest, value)) = mine.next() else {
                    break;
                };
                match value {
                    Some(v) => visit(rest, v)?,
                    None => true,
                }
            };
            if !go_on {
                return Ok(());
            }
            if next != std::cmp::Ordering::Less {
                if let Some(it) = it.as_mut() {
                    if reverse {
                        it.prev();
                    } else {
                        it.next();
                    }
                }
            }
        }
        if let Some(it) = it {
            // Inline, a scan that stops at a block not cached flags the segment for a rerun.
            it.status().map_err(|e| self.engine_error(e))?;
        }
        Ok(())
    }

    /// Copies every element of `from` into `to` (a new version of another key), for RENAME.
    pub fn elems_copy(&mut self, from: &Coll, to: &Coll) -> Result<(), Reply> {
        let kinds: &[u8] = match from.vtype {
            ValueType::ZSet => &[subkey::ELEM, subkey::SCORE],
            ValueType::Stream => &[subkey::ELEM, subkey::GROUP, subkey::PEL, subkey::CONSUMER],
            _ => &[subkey::ELEM],
        };
        for &kind in kinds {
            let mut items: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            self.elems(from, kind, false, None, |r, v| {
                items.push((r.to_vec(), v.to_vec()));
                Ok(true)
            })?;
            for (r, v) in items {
                self.elem_put(to, kind, &r, &v)?;
            }
        }
        Ok(())
    }
}

/// Decodes a list index stored as a sub-key's rest (8 bytes big-endian).
pub fn list_index(rest: &[u8]) -> Result<u64, Reply> {
    let b: [u8; 8] = rest
        .try_into()
        .map_err(|_| corrupt(DecodeError("list element key of the wrong length")))?;
    Ok(u64::from_be_bytes(b))
}

/// Decodes a stored sorted-set score (8 bytes, f64 little-endian, never NaN).
pub fn stored_score(v: &[u8]) -> Result<f64, Reply> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| corrupt(DecodeError("sorted-set score of the wrong length")))?;
    let s = f64::from_le_bytes(b);
    if s.is_nan() {
        return Err(corrupt(DecodeError("sorted-set score is NaN")));
    }
    Ok(s)
}
