//! MashMeta (RocksMash §3.3): one succinct trie per table that is both its index and an exact
//! filter.
//!
//! The table's distinct user keys form a compressed trie: the bytes every key shares are kept
//! once (the prefix), a node holding one key is a leaf that keeps the rest of the key (its
//! suffix), and the tree's shape is a DFUDS parenthesis string (a node of degree `d` is `d` "("
//! and one ")", nodes in depth-first order, with one extra leading "(") navigated with
//! rank/select and `findclose` from `vers-vecs`. Child labels sit in a byte array in the order of
//! their "(", so a node's labels are contiguous. A key ends at a node if its bit in `terminal`
//! is set; key `r` (in sorted order) is the `r`-th terminal node in depth-first order.
//!
//! The paper marks each data block's first key by turning its leaf's ")" into "]"; here the same
//! marks are a separate unary *block map* (for each data block, a 1 per key whose newest version
//! starts in it, then a 0), so a key's block is `select1(r) − r` without a third symbol in the
//! parenthesis string, and a block that only continues an earlier key's versions still counts.
//! The data blocks' handles follow as sizes.
//!
//! A lookup answers "which block" and "is the key here" at once with no false positives, so a
//! capacity table needs neither a block index nor a bloom filter. Invariants: built from sorted
//! distinct user keys; queries never panic on a block that passed [`codec::decode`].
//! Depends on `coding`, `error` and `sst::format` only.

mod build;
pub mod codec;

use std::cmp::Ordering;

pub use build::MashMetaBuilder;

use crate::sst::format::BlockHandle;
use codec::{Encoded, Parts};

/// A decoded MashMeta block with its query structures.
pub struct MashMeta {
    n_keys: usize,
    prefix: Vec<u8>,
    /// Non-zero: every key has this length and ends with `common_suffix` (not in the trie).
    fixed_len: usize,
    common_suffix: Vec<u8>,
    labels: Vec<u8>,
    suffix_bytes: Vec<u8>,
    blocks: Vec<BlockHandle>,
    /// Absent for a table without point keys.
    parts: Option<Parts>,
    encoded_len: usize,
}

/// Where a key falls among the table's keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The key is key number `r`.
    Found(usize),
    /// The key is absent; `r` keys are smaller.
    Absent(usize),
}

impl MashMeta {
    pub(crate) fn from_encoded(e: Encoded, encoded_len: usize) -> MashMeta {
        let parts = (e.n_nodes > 0).then(|| codec::parts(&e));
        MashMeta {
            n_keys: e.n_keys as usize,
            prefix: e.prefix,
            fixed_len: e.fixed_len as usize,
            common_suffix: e.common_suffix,
            labels: e.labels,
            suffix_bytes: e.suffix_bytes,
            blocks: e.blocks,
            parts,
            encoded_len,
        }
    }

    /// Decodes a MashMeta block (see [`codec`]).
    pub fn decode(b: &[u8]) -> crate::error::Result<MashMeta> {
        codec::decode(b)
    }

    pub fn num_keys(&self) -> usize {
        self.n_keys
    }

    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// The handle of data block `i` (`i < num_blocks()`).
    pub fn block(&self, i: usize) -> BlockHandle {
        self.blocks[i]
    }

    /// The bytes of the encoded block.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len
    }

    /// The data block holding the newest version of key number `r` (`r < num_keys()`).
    pub fn block_of_key(&self, r: usize) -> usize {
        match &self.parts {
            Some(p) => p.block_map.select1(r) - r,
            None => 0,
        }
    }

    /// Is `key` one of the table's user keys, and if not, how many keys are smaller.
    pub fn probe(&self, key: &[u8]) -> Probe {
        let Some(p) = &self.parts else {
            return Probe::Absent(0);
        };
        let plen = self.prefix.len();
        let shared = key
            .iter()
            .zip(&self.prefix)
            .take_while(|(a, b)| a == b)
            .count();
        if shared < plen {
            return if shared == key.len() || key[shared] < self.prefix[shared] {
                Probe::Absent(0)
            } else {
                Probe::Absent(self.n_keys)
            };
        }
        if self.fixed_len == 0 {
            return self.walk(p, &key[plen..]);
        }
        // Fixed-length keys: the trie holds the middles; the shared tail decides ties.
        let mid_end = self.fixed_len - self.common_suffix.len();
        let cut = key.len().min(mid_end).max(plen);
        match self.walk(p, &key[plen..cut]) {
            Probe::Found(r) => match key[cut..].cmp(&self.common_suffix) {
                Ordering::Equal => Probe::Found(r),
                Ordering::Less => Probe::Absent(r),
                Ordering::Greater => Probe::Absent(r + 1),
            },
            absent => absent,
        }
    }

    /// Walks `rest` (a key past the prefix) down the trie.
    fn walk(&self, p: &Parts, rest: &[u8]) -> Probe {
        // `pos` starts the current node's description; `end` is where its subtree ends.
        let (mut pos, mut end, mut depth) = (1usize, p.parens.len(), 0usize);
        loop {
            let id = p.parens.rank0(pos);
            let degree = p.parens.select0(id) - pos;
            let rank = p.terminal.rank1(id);
            if degree == 0 {
                // A leaf: terminal (checked at decode), holding key `rank`.
                let s = self.suffix(p, rank);
                return match rest[depth..].cmp(s) {
                    Ordering::Equal => Probe::Found(rank),
                    Ordering::Less => Probe::Absent(rank),
                    Ordering::Greater => Probe::Absent(rank + 1),
                };
            }
            if depth == rest.len() {
                let term = p.terminal.get(id) == Some(1);
                return if term {
                    Probe::Found(rank)
                } else {
                    Probe::Absent(rank)
                };
            }
            let first = p.parens.rank1(pos) - 1;
            let kids = &self.labels[first..first + degree];
            // The start of child `j`: its "(" is the `j`-th from the right of this node's run.
            let child = |j: usize| p.tree.close(pos + degree - 1 - j).map_or(end, |c| c + 1);
            match kids.binary_search(&rest[depth]) {
                Ok(j) => {
                    let next_end = if j + 1 < degree { child(j + 1) } else { end };
                    pos = child(j);
                    end = next_end;
                    depth += 1;
                }
                Err(j) => {
                    let after = if j < degree { child(j) } else { end };
                    return Probe::Absent(p.terminal.rank1(p.parens.rank0(after)));
                }
            }
        }
    }

    /// The data block to read for `key`: `None` when the table does not hold it.
    pub fn find_block(&self, key: &[u8]) -> Option<usize> {
        match self.probe(key) {
            Probe::Found(r) => Some(self.block_of_key(r)),
            Probe::Absent(_) => None,
        }
    }

    /// The first data block that can hold a key `>= key`; `None` past the last key.
    pub fn seek_block(&self, key: &[u8]) -> Option<usize> {
        let r = match self.probe(key) {
            Probe::Found(r) | Probe::Absent(r) => r,
        };
        (r < self.n_keys).then(|| self.block_of_key(r))
    }

    fn suffix<'a>(&'a self, p: &Parts, r: usize) -> &'a [u8] {
        // Key r's suffix is the run of ones before the r-th zero of the suffix map.
        let end_bit = p.suffix_map.select0(r);
        let start_bit = if r == 0 {
            0
        } else {
            p.suffix_map.select0(r - 1) + 1
        };
        let ones_before = start_bit - r;
        &self.suffix_bytes[ones_before..ones_before + (end_bit - start_bit)]
    }

    /// Every key, in order (for tests and inspection).
    pub fn keys(&self) -> Vec<Vec<u8>> {
        let Some(p) = &self.parts else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(self.n_keys);
        // Depth-first walk with an explicit stack of (node position, path so far).
        let mut stack = vec![(1usize, self.prefix.clone())];
        let tail = if self.fixed_len > 0 {
            &self.common_suffix[..]
        } else {
            &[]
        };
        while let Some((pos, path)) = stack.pop() {
            let id = p.parens.rank0(pos);
            let degree = p.parens.select0(id) - pos;
            if p.terminal.get(id) == Some(1) {
                let mut k = path.clone();
                if degree == 0 {
                    k.extend_from_slice(self.suffix(p, p.terminal.rank1(id)));
                }
                k.extend_from_slice(tail);
                out.push(k);
            }
            let first = p.parens.rank1(pos) - 1;
            for j in (0..degree).rev() {
                let Some(c) = p.tree.close(pos + degree - 1 - j) else {
                    continue;
                };
                let mut k = path.clone();
                k.push(self.labels[first + j]);
                stack.push((c + 1, k));
            }
        }
        out
    }
}

impl std::fmt::Debug for MashMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MashMeta")
            .field("keys", &self.n_keys)
            .field("blocks", &self.blocks.len())
            .field("prefix", &self.prefix)
            .field("bytes", &self.encoded_len)
            .finish()
    }
}

#[cfg(test)]
mod tests;
