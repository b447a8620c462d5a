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
    /// Label sets of dense nodes, 32 bytes each.
    bitmaps: Vec<u8>,
    suffix_bytes: Vec<u8>,
    blocks: Vec<BlockHandle>,
    /// Absent for a table without point keys.
    parts: Option<Parts>,
    /// Where each child of the root starts (every lookup passes the root: no `findclose`).
    root_children: Vec<u32>,
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
        let mut m = MashMeta {
            n_keys: e.n_keys as usize,
            prefix: e.prefix,
            // Checked to fit at decode.
            fixed_len: usize::try_from(e.fixed_len).unwrap_or(usize::MAX),
            common_suffix: e.common_suffix,
            labels: e.labels,
            bitmaps: e.bitmaps,
            suffix_bytes: e.suffix_bytes,
            blocks: e.blocks,
            parts,
            root_children: Vec::new(),
            encoded_len,
        };
        if let Some(p) = &m.parts {
            let ones = p.parens.rank1(1);
            let degree = m.degree(p, 1, 1 - ones);
            m.root_children = (0..degree)
                .map(|j| m.child(p, 1, degree, j) as u32)
                .collect();
        }
        m
    }

    /// Decodes a MashMeta block (see [`codec`]).
    pub fn decode(b: &[u8]) -> crate::error::Result<MashMeta> {
        codec::decode(b)
    }

    /// The number of distinct user keys.
    pub fn num_keys(&self) -> usize {
        self.n_keys
    }

    /// The number of data blocks.
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

    /// Walks `rest` (a key past the prefix) down the trie. Per level: one rank over the
    /// parentheses (the node's id and where its labels start), the degree from the bits that
    /// follow, a binary search of the labels and, unless the first child is taken, one
    /// `findclose`. Where a subtree ends is computed only when a miss needs it.
    fn walk(&self, p: &Parts, rest: &[u8]) -> Probe {
        let mut pos = 1usize;
        let mut depth = 0usize;
        loop {
            let ones = p.parens.rank1(pos);
            let id = pos - ones;
            let degree = self.degree(p, pos, id);
            if degree == 0 {
                // A leaf: terminal (checked at decode), holding key `rank`.
                let rank = p.terminal.rank1(id);
                let s = self.suffix(p, rank);
                return match rest[depth..].cmp(s) {
                    Ordering::Equal => Probe::Found(rank),
                    Ordering::Less => Probe::Absent(rank),
                    Ordering::Greater => Probe::Absent(rank + 1),
                };
            }
            if depth == rest.len() {
                let rank = p.terminal.rank1(id);
                return if p.terminal.get(id) == Some(1) {
                    Probe::Found(rank)
                } else {
                    Probe::Absent(rank)
                };
            }
            match self.find_child(p, ones, id, degree, rest[depth]) {
                Ok(j) => {
                    pos = self.child(p, pos, degree, j);
                    depth += 1;
                }
                Err(j) => {
                    let after = if j < degree {
                        self.child(p, pos, degree, j)
                    } else {
                        self.subtree_end(p, pos)
                    };
                    return Probe::Absent(p.terminal.rank1(p.parens.rank0(after)));
                }
            }
        }
    }

    /// Which child of node `id` (with `ones` "(" before it and `degree` children) has label
    /// `c`: `Ok(j)`, or `Err(j)` with `j` the children whose labels are smaller.
    #[inline]
    fn find_child(
        &self,
        p: &Parts,
        ones: usize,
        id: usize,
        degree: usize,
        c: u8,
    ) -> Result<usize, usize> {
        let dense_before = p.dense.rank1(id);
        if p.dense.get(id) == Some(1) {
            let set = &self.bitmaps[32 * dense_before..32 * dense_before + 32];
            let (byte, bit) = (c as usize / 8, c % 8);
            let below = set[..byte]
                .iter()
                .map(|b| b.count_ones() as usize)
                .sum::<usize>()
                + (set[byte] & ((1u8 << bit) - 1)).count_ones() as usize;
            return if set[byte] >> bit & 1 == 1 {
                Ok(below)
            } else {
                Err(below)
            };
        }
        // Sparse labels sit in "(" order, minus the children of dense nodes before this one.
        let first = ones - 1 - p.dense_children_before[dense_before] as usize;
        self.labels[first..first + degree].binary_search(&c)
    }

    /// The label of child `j` of node `id` (see [`Self::find_child`]).
    fn label(&self, p: &Parts, ones: usize, id: usize, j: usize) -> u8 {
        let dense_before = p.dense.rank1(id);
        if p.dense.get(id) == Some(1) {
            let set = &self.bitmaps[32 * dense_before..32 * dense_before + 32];
            let mut seen = 0;
            for c in 0..=255u8 {
                if set[c as usize / 8] >> (c % 8) & 1 == 1 {
                    if seen == j {
                        return c;
                    }
                    seen += 1;
                }
            }
            return 0;
        }
        self.labels[ones - 1 - p.dense_children_before[dense_before] as usize + j]
    }

    /// The degree of the node starting at `pos` (id `id`): the run of "(" before its ")".
    #[inline]
    fn degree(&self, p: &Parts, pos: usize, id: usize) -> usize {
        // At most 256 children: a few words of bits, cheaper than a select.
        let mut run = 0;
        while run <= 256 {
            let at = pos + run;
            let n = (p.parens.len() - at).min(64);
            if n == 0 {
                break;
            }
            let ones = p.parens.get_bits(at, n).unwrap_or(0).trailing_ones() as usize;
            run += ones;
            if ones < n {
                return run;
            }
        }
        p.parens.select0(id) - pos
    }

    /// Where child `j` of the node at `pos` (of `degree` children) starts: the first right
    /// after the node, the others after the ")" matching their "(".
    #[inline]
    fn child(&self, p: &Parts, pos: usize, degree: usize, j: usize) -> usize {
        if pos == 1 {
            if let Some(&c) = self.root_children.get(j) {
                return c as usize;
            }
        }
        let first = pos + degree + 1;
        if j == 0 {
            return first;
        }
        // When the children before `j` are all leaves (each a lone ")"), child `j` follows them
        // directly: the common case low in the trie, and no search.
        if first + j <= p.parens.len() {
            let mut at = 0;
            while at < j {
                let n = (j - at).min(64);
                if p.parens.get_bits(first + at, n) != Some(0) {
                    break;
                }
                at += n;
            }
            if at >= j {
                return first + j;
            }
        }
        p.tree
            .close(pos + degree - 1 - j)
            .map_or(p.parens.len(), |c| c + 1)
    }

    /// Where the subtree of the node at `pos` ends (the next node in depth-first order that is
    /// not its descendant): the ")" just before a node closes the "(" that points at it, and the
    /// subtree ends where the excess first drops below that.
    fn subtree_end(&self, p: &Parts, pos: usize) -> usize {
        p.tree
            .fwd_search(pos - 1, -1)
            .map_or(p.parens.len(), |c| c + 1)
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
        if self.suffix_bytes.is_empty() {
            return &[];
        }
        // Key r's suffix is the run of ones before the r-th zero of the suffix map.
        let end_bit = p.suffix_map.select0(r);
        // The run is usually short: read it backwards from the bits before the zero.
        let n = end_bit.min(64);
        let before = p.suffix_map.get_bits(end_bit - n, n).unwrap_or(0);
        let run = if n == 0 {
            0
        } else {
            (before << (64 - n)).leading_ones() as usize
        };
        let start_bit = if run < n || end_bit <= 64 {
            end_bit - run.min(n)
        } else if r == 0 {
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
            let ones = p.parens.rank1(pos);
            for j in (0..degree).rev() {
                let mut k = path.clone();
                k.push(self.label(p, ones, id, j));
                stack.push((self.child(p, pos, degree, j), k));
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
