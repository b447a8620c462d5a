//! A table's index: which data block to read for a key.
//!
//! Two kinds, chosen per table when it is written and recorded in its footer version:
//! - [`IndexKind::Block`]: an index block of separator internal keys (one per data block), with
//!   a bloom filter beside it. Every fast-tier table, and capacity tables with
//!   `capacity_index = block`.
//! - [`IndexKind::MashMeta`]: the succinct trie of [`trie`], exact membership and block number
//!   in one structure, no bloom filter. Capacity tables with `capacity_index = mashmeta`.
//!
//! [`IndexCursor`] walks either kind block by block for the two-level table iterator; a point
//! lookup asks [`BlockIndex::find`], which searches a flat array of key heads first.
//! Depends on `sst::block`, `sst::format`, `types`; never on `db`.

pub mod trie;

use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::format::BlockHandle;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::types::{self, compare_internal};
pub use trie::MashMeta;

/// How a table finds its data blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IndexKind {
    /// Separator keys in an index block, plus a bloom filter.
    Block,
    /// RocksMash's MashMeta succinct trie: index and exact filter in one.
    MashMeta,
    /// Per table, MashMeta when its trie is no larger than the block index and bloom filter
    /// would be (keys with shared prefixes), else those (high-entropy keys, where an exact
    /// structure must be larger than a filter).
    #[default]
    Auto,
}

impl IndexKind {
    /// The kind's name, as configuration spells it: `"block"`, `"mashmeta"` or `"auto"`.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Block => "block",
            IndexKind::MashMeta => "mashmeta",
            IndexKind::Auto => "auto",
        }
    }

    /// The kind named `s` (as [`IndexKind::name`] spells it); `None` for any other name.
    pub fn parse(s: &str) -> Option<IndexKind> {
        match s {
            "block" => Some(IndexKind::Block),
            "mashmeta" => Some(IndexKind::MashMeta),
            "auto" => Some(IndexKind::Auto),
            _ => None,
        }
    }
}

/// An open table's index.
pub enum TableIndex {
    /// A block index, with the table's bloom filter beside it (if any).
    Blocks(BlockIndex),
    /// A MashMeta trie: index and exact filter in one.
    Trie(Arc<MashMeta>),
}

/// An index block held in memory, with a flat array of 8-byte key heads beside it: for each
/// restart point, [`types::key_head`] of its user key past the prefix that every user key in the
/// block shares. A point lookup binary-searches the heads (8 bytes each, so the last steps share
/// cache lines) and compares whole keys only among restart points whose head equals the
/// target's; the index block itself is searched with about one cache miss per step (the restart
/// offset, then the entry). Skipping the shared prefix is what makes the heads tell keys apart
/// when an application prefixes every key alike (`user:000000…`, a table id): the heads of the
/// first 8 bytes would then all be equal and every lookup would fall back to the block's binary
/// search. The heads cost 8 bytes per restart point (8.5 with `top`): per data block, as index
/// blocks are written with a restart interval of 1.
///
/// A table's heads are rarely in the CPU cache when a lookup reaches it (a tree holds thousands
/// of tables), so a plain binary search over a thousand heads is ten dependent cache misses. The
/// search goes through `top`, every [`TOP_EVERY`]th head, first: its lines are all hinted at
/// once, then one segment of fewer than `TOP_EVERY` heads (two or three lines, hinted together)
/// is searched — about two misses' wait.
pub struct BlockIndex {
    block: Block,
    /// The longest prefix of every restart point's user key (those of the first and last
    /// suffice: keys between two keys sharing a prefix share it too).
    prefix: Box<[u8]>,
    heads: Box<[u64]>,
    /// `heads[i * TOP_EVERY]` for every `i`.
    top: Box<[u64]>,
}

/// One head in this many is sampled into [`BlockIndex`]'s `top`.
const TOP_EVERY: usize = 16;
/// `top` lines a search hints before it starts (a larger `top` is searched without hints).
const TOP_HINT_LINES: usize = 8;

/// The first index of the sorted `heads` whose head is `>= th` (`heads.partition_point(|h| h <
/// th)`), through `top` (every [`TOP_EVERY`]th head).
fn lower_bound(heads: &[u64], top: &[u64], th: u64) -> usize {
    if top.len() <= TOP_HINT_LINES * 8 {
        hint_lines(top);
    }
    // heads[j * K] >= th (or j * K is past the end) and heads[(j - 1) * K] < th.
    let j = top.partition_point(|&h| h < th);
    let lo = if j == 0 { 0 } else { (j - 1) * TOP_EVERY + 1 };
    let hi = (j * TOP_EVERY).min(heads.len());
    let segment = &heads[lo..hi];
    hint_lines(segment);
    lo + segment.partition_point(|&h| h < th)
}

/// Hints every cache line `s` touches.
fn hint_lines(s: &[u64]) {
    crate::memtable::prefetch::prefetch_range(s.as_ptr(), std::mem::size_of_val(s));
}

/// The end of the run of heads equal to `th` that starts at `a` (`heads[a..]` is sorted and
/// `>= th`). Galloping: usually `heads[a]` differs, and this reads that one head.
fn equal_run_end(heads: &[u64], a: usize, th: u64) -> usize {
    let tail = &heads[a..];
    if tail.first() != Some(&th) {
        return a;
    }
    // tail[hi / 2] == th throughout.
    let mut hi = 1;
    while hi < tail.len() && tail[hi] == th {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(tail.len());
    a + lo + tail[lo..hi].partition_point(|&h| h == th)
}

impl BlockIndex {
    /// Takes an index block; every restart point's key must decode and carry a trailer (a
    /// table with no data blocks has an empty index block).
    pub fn new(block: Block) -> Result<BlockIndex> {
        let n = if block.is_empty() {
            0
        } else {
            block.num_restarts()
        };
        let user_key_at = |i: usize| match block.restart_key(i) {
            Some(k) if k.len() >= 8 => Ok(types::user_key(k)),
            _ => Err(Error::corruption(format!(
                "index block: restart point {i} holds no internal key"
            ))),
        };
        let prefix: Box<[u8]> = match n {
            0 => Box::default(),
            _ => {
                let (first, last) = (user_key_at(0)?, user_key_at(n - 1)?);
                let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
                first[..shared].into()
            }
        };
        let heads = (0..n)
            .map(|i| {
                let k = user_key_at(i)?;
                // A block whose keys are out of order would break the heads' order; the block's
                // own search would then disagree with the cursor, so refuse it here.
                k.strip_prefix(&prefix[..])
                    .map(types::key_head)
                    .ok_or_else(|| Error::corruption("index block: keys are out of order"))
            })
            .collect::<Result<Box<[u64]>>>()?;
        let top = heads.iter().step_by(TOP_EVERY).copied().collect();
        Ok(BlockIndex {
            block,
            prefix,
            heads,
            top,
        })
    }

    /// The index block.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// The handle of the first data block that can hold an entry `>=` the internal key
    /// `target` (`None`: past the last block). Finds the same block as
    /// [`IndexCursor::seek`]. `key` is scratch space (the caller's, reused across probes).
    pub fn find(&self, target: &[u8], key: &mut Vec<u8>) -> Result<Option<BlockHandle>> {
        // Restart points before `a` hold keys < target, those from `b` on keys > target.
        let user = types::user_key(target);
        let (a, b) = match user.strip_prefix(&self.prefix[..]) {
            Some(rest) => {
                let th = types::key_head(rest);
                let a = lower_bound(&self.heads, &self.top, th);
                (a, equal_run_end(&self.heads, a, th))
            }
            // Every restart point's user key starts with the prefix and the target's does not,
            // so they all compare one way against it.
            None if user < &self.prefix[..] => (0, 0),
            None => (self.heads.len(), self.heads.len()),
        };
        let start = self.block.seek_start(target, compare_internal, a, b)?;
        match self
            .block
            .seek_from_restart(start, target, compare_internal, key)?
        {
            Some((from, to)) => BlockHandle::decode(&self.block.bytes()[from..to]).map(Some),
            None => Ok(None),
        }
    }
}

impl TableIndex {
    /// A cursor over the table's data blocks, not positioned yet.
    pub fn cursor(&self) -> IndexCursor {
        match self {
            TableIndex::Blocks(b) => IndexCursor::Blocks(b.block.iter(compare_internal)),
            TableIndex::Trie(t) => IndexCursor::Trie {
                trie: t.clone(),
                at: None,
            },
        }
    }

    /// [`IndexKind::Block`] or [`IndexKind::MashMeta`] (never `Auto`).
    pub fn kind(&self) -> IndexKind {
        match self {
            TableIndex::Blocks(_) => IndexKind::Block,
            TableIndex::Trie(_) => IndexKind::MashMeta,
        }
    }
}

/// A position among a table's data blocks.
pub enum IndexCursor {
    /// On a block index: an iterator over the index block.
    Blocks(BlockIter),
    /// On a MashMeta trie: data blocks by number.
    Trie {
        /// The trie.
        trie: Arc<MashMeta>,
        /// The current block's number; `None`: not on a block.
        at: Option<usize>,
    },
}

impl IndexCursor {
    /// Whether the cursor is on a block.
    pub fn valid(&self) -> bool {
        match self {
            IndexCursor::Blocks(it) => it.valid(),
            IndexCursor::Trie { at, .. } => at.is_some(),
        }
    }

    /// Moves to the first block (invalid if the table has none).
    pub fn seek_to_first(&mut self) {
        match self {
            IndexCursor::Blocks(it) => it.seek_to_first(),
            IndexCursor::Trie { trie, at } => *at = (trie.num_blocks() > 0).then_some(0),
        }
    }

    /// Moves to the last block (invalid if the table has none).
    pub fn seek_to_last(&mut self) {
        match self {
            IndexCursor::Blocks(it) => it.seek_to_last(),
            IndexCursor::Trie { trie, at } => *at = trie.num_blocks().checked_sub(1),
        }
    }

    /// The first block that can hold an entry `>=` the internal key `target`.
    pub fn seek(&mut self, target: &[u8]) {
        match self {
            IndexCursor::Blocks(it) => it.seek(target),
            IndexCursor::Trie { trie, at } => *at = trie.seek_block(types::user_key(target)),
        }
    }

    /// Moves to the next block (invalid past the last).
    pub fn next(&mut self) {
        match self {
            IndexCursor::Blocks(it) => it.next(),
            IndexCursor::Trie { trie, at } => {
                *at = at.map(|i| i + 1).filter(|&i| i < trie.num_blocks())
            }
        }
    }

    /// Moves to the previous block (invalid before the first).
    pub fn prev(&mut self) {
        match self {
            IndexCursor::Blocks(it) => it.prev(),
            IndexCursor::Trie { at, .. } => *at = at.and_then(|i| i.checked_sub(1)),
        }
    }

    /// The current block's handle (the cursor must be valid).
    pub fn handle(&self) -> Result<BlockHandle> {
        match self {
            IndexCursor::Blocks(it) => BlockHandle::decode(it.value()),
            IndexCursor::Trie { trie, at } => at
                .filter(|&i| i < trie.num_blocks())
                .map(|i| trie.block(i))
                .ok_or_else(|| crate::error::Error::invalid("index cursor is not on a block")),
        }
    }

    /// The error the cursor ran into, if any (a MashMeta cursor never fails).
    pub fn status(&self) -> Result<()> {
        match self {
            IndexCursor::Blocks(it) => it.status(),
            IndexCursor::Trie { .. } => Ok(()),
        }
    }

    /// The current block's number, for a MashMeta index (`None` for a block index, whose
    /// cursor does not count blocks).
    pub fn block_number(&self) -> Option<usize> {
        match self {
            IndexCursor::Blocks(_) => None,
            IndexCursor::Trie { at, .. } => *at,
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use strata_test_support::{seed, Rng};

    use super::*;
    use crate::sst::block::BlockBuilder;

    /// A key whose head is often shared with others: a few distinct 8-byte starts, then a
    /// random tail, sometimes none (keys shorter than a head, and the empty key).
    fn key(rng: &mut Rng) -> Vec<u8> {
        let len = rng.index(14);
        let start = rng.below(3);
        (0..len)
            .map(|i| {
                if i < 6 {
                    start as u8
                } else {
                    rng.below(4) as u8
                }
            })
            .collect()
    }

    /// A prefix that a round's separators all share (often none, sometimes longer than a head).
    fn shared_prefix(rng: &mut Rng) -> Vec<u8> {
        let len = [0, 0, 1, 3, 9][rng.index(5)];
        (0..len).map(|_| 1 + rng.below(2) as u8).collect()
    }

    /// A target near `prefix`: usually with it, else without it, cut short, or with its last
    /// byte one lower or higher (targets before and after every separator).
    fn target_key(rng: &mut Rng, prefix: &[u8]) -> Vec<u8> {
        let mut p = prefix.to_vec();
        match rng.index(8) {
            0 => p.clear(),
            1 => p.truncate(rng.index(p.len() + 1)),
            2 => {
                if let Some(b) = p.last_mut() {
                    *b -= 1;
                }
            }
            3 => {
                if let Some(b) = p.last_mut() {
                    *b += 1;
                }
            }
            _ => {}
        }
        p.extend(key(rng));
        p
    }

    /// The two-level lower bound and the galloping equal-run end agree with plain binary
    /// searches, on sorted heads with long runs of equal values and every target in between.
    #[test]
    fn head_searches_agree_with_partition_point() {
        let s = seed("head_searches_agree_with_partition_point");
        let mut rng = Rng::new(s);
        for round in 0..400 {
            let n = rng.index([5, 40, 300, 3000][round % 4]);
            let spread = [2, 10, 1 << 20][rng.index(3)];
            let mut heads: Vec<u64> = (0..n).map(|_| rng.below(spread)).collect();
            heads.sort_unstable();
            let top: Vec<u64> = heads.iter().step_by(TOP_EVERY).copied().collect();
            let edges = [u64::MAX, spread, spread - 1];
            let draws = (0..20).map(|_| rng.below(spread + 1));
            for th in (0..spread.min(50)).chain(edges).chain(draws) {
                let a = heads.partition_point(|&h| h < th);
                assert_eq!(
                    lower_bound(&heads, &top, th),
                    a,
                    "seed {s} round {round} th {th}"
                );
                let b = a + heads[a..].partition_point(|&h| h == th);
                assert_eq!(
                    equal_run_end(&heads, a, th),
                    b,
                    "seed {s} round {round} th {th}"
                );
            }
        }
    }

    /// `find` (head array, then whole keys) lands on the block a cursor seek does, for index
    /// blocks of any restart interval, separators with and without a shared prefix, and targets
    /// inside, between and around the separators.
    #[test]
    fn find_agrees_with_the_cursor() {
        let s = seed("find_agrees_with_the_cursor");
        let mut rng = Rng::new(s);
        for round in 0..300 {
            let prefix = shared_prefix(&mut rng);
            let mut seps: Vec<Vec<u8>> = (0..rng.index([60, 400][round % 2]))
                .map(|_| {
                    let seq = rng.below(1000);
                    let user = [&prefix[..], &key(&mut rng)].concat();
                    types::internal_key(&user, seq, 1)
                })
                .collect();
            seps.sort_by(|a, b| compare_internal(a, b));
            seps.dedup();
            let interval = [1, 2, 16][rng.index(3)];
            let mut b = BlockBuilder::new(interval);
            for (i, k) in seps.iter().enumerate() {
                let mut v = Vec::new();
                BlockHandle {
                    offset: i as u64 * 100,
                    size: 99,
                }
                .encode_to(&mut v);
                b.add(k, &v);
            }
            let index = BlockIndex::new(Block::new(Bytes::from(b.finish())).unwrap()).unwrap();
            let table = TableIndex::Blocks(index);
            let TableIndex::Blocks(index) = &table else {
                unreachable!()
            };
            for _ in 0..50 {
                let seq = rng.below(1000);
                let target = types::internal_key(&target_key(&mut rng, &prefix), seq, 1);
                let mut c = table.cursor();
                c.seek(&target);
                let want = c.valid().then(|| c.handle().unwrap());
                let got = index.find(&target, &mut Vec::new()).unwrap();
                assert_eq!(
                    got.map(|h| h.offset),
                    want.map(|h| h.offset),
                    "seed {s}, round {round}, interval {interval}, target {target:?}"
                );
            }
        }
    }
}
