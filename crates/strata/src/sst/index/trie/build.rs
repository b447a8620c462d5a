//! Builds a MashMeta block from a table's sorted, distinct user keys.
//!
//! The trie is laid out in DFUDS order by an explicit stack (no recursion: a long shared chain of
//! bytes must not overflow the stack). A node holding exactly one key is a leaf that keeps the
//! rest of that key as its suffix (the "compressed" trie); the bytes every key shares are kept
//! once as the prefix. Pure: no I/O.

use super::codec::{Bits, Encoded, DENSE_DEGREE};
use crate::sst::format::BlockHandle;

/// Collects the keys of one table as the builder writes it.
#[derive(Default)]
pub struct MashMetaBuilder {
    /// Every distinct user key, concatenated, with `ends[i]` the end of key `i`.
    keys: Vec<u8>,
    ends: Vec<usize>,
    /// The data block holding each key's first (newest) version.
    key_block: Vec<u32>,
    blocks: Vec<BlockHandle>,
}

impl MashMetaBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// Notes a point entry of `user_key`, which goes into data block number `self.blocks.len()`
    /// (the block being filled). Versions after the first of a user key are ignored.
    pub fn add(&mut self, user_key: &[u8]) {
        let n = self.ends.len();
        if n > 0 && self.key(n - 1) == user_key {
            return;
        }
        self.keys.extend_from_slice(user_key);
        self.ends.push(self.keys.len());
        self.key_block.push(self.blocks.len() as u32);
    }

    /// Notes that the data block being filled was written at `h`.
    pub fn finish_block(&mut self, h: BlockHandle) {
        self.blocks.push(h);
    }

    /// The number of distinct user keys added.
    pub fn num_keys(&self) -> usize {
        self.ends.len()
    }

    /// Data blocks finished so far.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Encodes the trie, the block map and the block handles (format in `docs/format.md`).
    pub fn finish(&self) -> Vec<u8> {
        self.build().encode()
    }

    fn build(&self) -> Encoded {
        let n = self.ends.len();
        let mut e = Encoded {
            n_keys: n as u64,
            blocks: self.blocks.clone(),
            ..Default::default()
        };
        // Block map: for each block, a 1 per key whose first version starts in it, then a 0.
        let mut k = 0;
        for b in 0..self.blocks.len() as u32 {
            while k < n && self.key_block[k] == b {
                e.block_map.push(true);
                k += 1;
            }
            e.block_map.push(false);
        }
        if n == 0 {
            return e;
        }
        let (first, last) = (self.key(0), self.key(n - 1));
        let plen = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        e.prefix = first[..plen].to_vec();
        // Keys of one length may also share their last bytes (fixed-width keys padded, or with
        // a constant field at the end): those are kept once too. Only for one length: with
        // keys of different lengths, cutting a shared tail would change their order.
        let len = first.len();
        let mut slen = 0;
        if (0..n).all(|i| self.key(i).len() == len) {
            slen = len - plen;
            for i in 1..n {
                let k = self.key(i);
                slen = (0..slen)
                    .take_while(|&j| k[len - 1 - j] == first[len - 1 - j])
                    .count();
            }
            e.fixed_len = len as u64;
            e.common_suffix = first[len - slen..].to_vec();
        }
        let key = |i: usize| {
            let k = self.key(i);
            &k[..k.len() - slen]
        };
        e.parens.push(true); // the extra leading "(" that balances DFUDS

        // Frames: the key range [lo, hi) of one node; its keys share `depth` bytes past the
        // prefix. Pushed in reverse so children come off the stack in label order.
        let mut stack = vec![(0usize, n, plen)];
        while let Some((lo, hi, depth)) = stack.pop() {
            // A leaf always ends its one key (after its suffix).
            let terminal = hi - lo == 1 || key(lo).len() == depth;
            e.n_nodes += 1;
            e.terminal.push(terminal);
            if hi - lo == 1 {
                // A leaf: one key, whose remaining bytes are the suffix.
                e.parens.push(false);
                let suffix = &key(lo)[depth..];
                e.suffix_bytes.extend_from_slice(suffix);
                e.suffix_map.push_unary(suffix.len());
                continue;
            }
            if terminal {
                e.suffix_map.push_unary(0);
            }
            let first_child = lo + terminal as usize;
            let mut children = Vec::new();
            let mut i = first_child;
            while i < hi {
                let c = key(i)[depth];
                let mut j = i + 1;
                while j < hi && key(j)[depth] == c {
                    j += 1;
                }
                children.push((i, j, c));
                i = j;
            }
            if children.len() > DENSE_DEGREE {
                // A dense node: its labels as a 256-bit set (fewer bits than a byte each).
                e.dense.push(e.n_nodes - 1);
                let mut set = [0u8; 32];
                for &(_, _, c) in &children {
                    set[c as usize / 8] |= 1 << (c % 8);
                }
                e.bitmaps.extend_from_slice(&set);
            }
            for &(_, _, c) in &children {
                e.parens.push(true);
                if children.len() <= DENSE_DEGREE {
                    e.labels.push(c);
                }
            }
            e.parens.push(false);
            for &(i, j, _) in children.iter().rev() {
                stack.push((i, j, depth + 1));
            }
        }
        e
    }
}

impl Bits {
    /// `n` ones then a zero: a length in unary.
    fn push_unary(&mut self, n: usize) {
        for _ in 0..n {
            self.push(true);
        }
        self.push(false);
    }
}
