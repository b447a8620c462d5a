//! The MashMeta block's bytes (`docs/format.md`, "MashMeta block"), and their validation.
//!
//! Layout (all varints LEB128, bit strings packed least-significant bit first, each padded to a
//! whole byte):
//!
//! ```text
//! version u8 (1) | n_keys | n_nodes | n_blocks | prefix_len | prefix
//! | fixed_len | [common_len | common suffix, when fixed_len > 0] | suffix_len | labels_len
//! | n_dense | parens (2·n_nodes bits) | labels (labels_len bytes)
//! | dense node ids (n_dense varints, deltas) | label sets (32 bytes per dense node)
//! | terminal (n_nodes bits) | suffix map (n_keys + suffix_len bits; absent if suffix_len = 0)
//! | suffix bytes | block map (n_keys + n_blocks bits) | first block offset | n_blocks × size
//! ```
//!
//! The block arrives checksummed (it is a table block), but the decoder still treats it as
//! untrusted: every count is bounded by the bytes present, and the structure is checked in one
//! pass (balanced parentheses, one label per child in increasing order, every leaf terminal, a
//! suffix only on leaves, a block map ending in a block boundary) so no query can index out of
//! range or loop. It is fuzzed (`mashmeta` target).

use vers_vecs::{BitVec, BpTree, RsVec};

use super::MashMeta;
use crate::coding::{put_varint64, Decoder};
use crate::error::{Error, Result};
use crate::sst::format::{BlockHandle, BLOCK_TRAILER_SIZE};

/// The MashMeta block format version (its first byte).
pub const VERSION: u8 = 1;
/// A node with more children than this keeps their labels as a 256-bit set (32 bytes) instead
/// of a byte each: RocksMash's sparse encoding, with SuRF's dense one where it is smaller.
pub const DENSE_DEGREE: usize = 32;

/// A growable bit string.
#[derive(Default, Clone, Debug)]
pub struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// Appends one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        if bit {
            self.words[self.len / 64] |= 1 << (self.len % 64);
        }
        self.len += 1;
    }

    /// The number of bits.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the string holds no bit.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn get(&self, i: usize) -> bool {
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    fn write(&self, out: &mut Vec<u8>) {
        let bytes = self.len.div_ceil(8);
        out.extend(self.words.iter().flat_map(|w| w.to_le_bytes()).take(bytes));
    }

    fn read(d: &mut Decoder<'_>, len: usize) -> Option<Bits> {
        let raw = d.bytes(len.div_ceil(8))?;
        let mut words = vec![0u64; len.div_ceil(64)];
        for (i, b) in raw.iter().enumerate() {
            words[i / 8] |= (*b as u64) << (8 * (i % 8));
        }
        if !len.is_multiple_of(64) {
            // Padding bits must be zero: one encoding per trie.
            let last = words.last().copied().unwrap_or(0);
            if last >> (len % 64) != 0 {
                return None;
            }
        }
        Some(Bits { words, len })
    }

    fn to_bitvec(&self) -> BitVec {
        let mut v = BitVec::from_limbs(&self.words);
        v.drop_last(self.words.len() * 64 - self.len);
        v
    }

    fn ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// The parts of a MashMeta block, before query structures are built over them.
#[derive(Default, Clone, Debug)]
pub struct Encoded {
    /// The number of distinct user keys.
    pub n_keys: u64,
    /// The number of trie nodes.
    pub n_nodes: u64,
    /// The bytes every key starts with, kept once.
    pub prefix: Vec<u8>,
    /// Non-zero: every key is this long and ends with `common_suffix`, which the trie omits.
    pub fixed_len: u64,
    /// With `fixed_len`: the bytes every key ends with; empty otherwise.
    pub common_suffix: Vec<u8>,
    /// The DFUDS tree: a leading `(`, then per node in depth-first order a `(` per child and a `)`.
    pub parens: Bits,
    /// The child labels of the sparse nodes, a byte per child, in node order.
    pub labels: Vec<u8>,
    /// Ids of the dense nodes (increasing) and their label sets, 32 bytes each.
    pub dense: Vec<u64>,
    /// The dense nodes' label sets, 32 bytes (256 bits) each, in `dense` order.
    pub bitmaps: Vec<u8>,
    /// A bit per node, in node order: 1 where a key ends.
    pub terminal: Bits,
    /// Each key's suffix length in unary (that many 1s, then a 0), in key order.
    pub suffix_map: Bits,
    /// The keys' suffixes (the rest of a key below its leaf), concatenated in key order.
    pub suffix_bytes: Vec<u8>,
    /// Per data block, a 1 for each key whose newest version it holds, then a 0.
    pub block_map: Bits,
    /// The data blocks' handles, in file order.
    pub blocks: Vec<BlockHandle>,
}

impl Encoded {
    /// The block's bytes in the layout above (what [`decode`] reads).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        for v in [self.n_keys, self.n_nodes, self.blocks.len() as u64] {
            put_varint64(&mut out, v);
        }
        put_varint64(&mut out, self.prefix.len() as u64);
        out.extend_from_slice(&self.prefix);
        put_varint64(&mut out, self.fixed_len);
        if self.fixed_len > 0 {
            put_varint64(&mut out, self.common_suffix.len() as u64);
            out.extend_from_slice(&self.common_suffix);
        }
        put_varint64(&mut out, self.suffix_bytes.len() as u64);
        put_varint64(&mut out, self.labels.len() as u64);
        put_varint64(&mut out, self.dense.len() as u64);
        self.parens.write(&mut out);
        out.extend_from_slice(&self.labels);
        let mut last = 0;
        for &d in &self.dense {
            put_varint64(&mut out, d - last);
            last = d;
        }
        out.extend_from_slice(&self.bitmaps);
        self.terminal.write(&mut out);
        if !self.suffix_bytes.is_empty() {
            self.suffix_map.write(&mut out);
        }
        out.extend_from_slice(&self.suffix_bytes);
        self.block_map.write(&mut out);
        put_varint64(&mut out, self.blocks.first().map_or(0, |h| h.offset));
        for h in &self.blocks {
            put_varint64(&mut out, h.size);
        }
        out
    }
}

fn bad(what: &str) -> Error {
    Error::corruption(format!("malformed MashMeta block: {what}"))
}

/// A count read from the block, bounded by `max` (what the remaining bytes could describe).
fn count(d: &mut Decoder<'_>, max: usize, what: &str) -> Result<usize> {
    let v = d.varint64().ok_or_else(|| bad(what))?;
    usize::try_from(v)
        .ok()
        .filter(|&v| v <= max)
        .ok_or_else(|| bad(what))
}

/// Decodes and validates a MashMeta block.
pub fn decode(b: &[u8]) -> Result<MashMeta> {
    let mut d = Decoder::new(b);
    match d.u8() {
        Some(VERSION) => {}
        Some(v) => return Err(bad(&format!("unknown version {v}"))),
        None => return Err(bad("empty")),
    }
    // Every node costs at least 2 bits and every key or block at least one: a count beyond
    // 8 × the block's bytes is damage, and rejecting it early bounds every allocation below.
    let cap = b.len().saturating_mul(8);
    let n_keys = count(&mut d, cap, "key count")?;
    let n_nodes = count(&mut d, cap, "node count")?;
    let n_blocks = count(&mut d, cap, "block count")?;
    let plen = count(&mut d, b.len(), "prefix length")?;
    let prefix = d.bytes(plen).ok_or_else(|| bad("prefix"))?.to_vec();
    let fixed_len = d.varint64().ok_or_else(|| bad("fixed length"))?;
    let fixed_len = usize::try_from(fixed_len).map_err(|_| bad("fixed length"))?;
    let mut common_suffix = Vec::new();
    // With keys of one length, the length of every key's middle (what the trie holds).
    let mut middle = None;
    if fixed_len > 0 {
        let clen = count(&mut d, b.len(), "common suffix length")?;
        common_suffix = d.bytes(clen).ok_or_else(|| bad("common suffix"))?.to_vec();
        middle = Some(
            fixed_len
                .checked_sub(plen + clen)
                .ok_or_else(|| bad("prefix and common suffix longer than the keys"))?,
        );
    }
    let slen = count(&mut d, b.len(), "suffix length")?;
    let llen = count(&mut d, b.len(), "labels length")?;
    let n_dense = count(&mut d, n_nodes, "dense node count")?;
    if (n_keys == 0) != (n_nodes == 0) || n_nodes < n_keys {
        return Err(bad("key and node counts disagree"));
    }
    let parens = Bits::read(&mut d, 2 * n_nodes).ok_or_else(|| bad("parentheses"))?;
    let labels = d.bytes(llen).ok_or_else(|| bad("labels"))?.to_vec();
    let mut dense = Vec::with_capacity(n_dense);
    let mut last = 0u64;
    for i in 0..n_dense {
        let delta = d.varint64().ok_or_else(|| bad("dense node id"))?;
        if i > 0 && delta == 0 {
            return Err(bad("dense node ids not increasing"));
        }
        last = last
            .checked_add(delta)
            .filter(|&id| id < n_nodes as u64)
            .ok_or_else(|| bad("dense node id out of range"))?;
        dense.push(last);
    }
    let bitmaps = d
        .bytes(n_dense * 32)
        .ok_or_else(|| bad("label sets"))?
        .to_vec();
    let terminal = Bits::read(&mut d, n_nodes).ok_or_else(|| bad("terminal bits"))?;
    let suffix_map = if slen > 0 {
        Bits::read(&mut d, n_keys + slen).ok_or_else(|| bad("suffix map"))?
    } else {
        let mut z = Bits::default();
        for _ in 0..n_keys {
            z.push(false);
        }
        z
    };
    let suffix_bytes = d.bytes(slen).ok_or_else(|| bad("suffix bytes"))?.to_vec();
    let block_map = Bits::read(&mut d, n_keys + n_blocks).ok_or_else(|| bad("block map"))?;
    let mut offset = d.varint64().ok_or_else(|| bad("first block offset"))?;
    let mut blocks = Vec::with_capacity(n_blocks);
    for _ in 0..n_blocks {
        let size = d.varint64().ok_or_else(|| bad("block size"))?;
        blocks.push(BlockHandle { offset, size });
        offset = offset
            .checked_add(size)
            .and_then(|o| o.checked_add(BLOCK_TRAILER_SIZE as u64))
            .ok_or_else(|| bad("block offsets overflow"))?;
    }
    if !d.is_empty() {
        return Err(bad("trailing bytes"));
    }
    check_shape(
        &parens,
        &labels,
        (&dense, &bitmaps),
        (&terminal, &suffix_map, n_keys),
        middle,
    )?;
    if terminal.ones() != n_keys || suffix_map.ones() != slen || block_map.ones() != n_keys {
        return Err(bad("counts disagree with the bit strings"));
    }
    if n_keys > 0 && (n_blocks == 0 || block_map.get(block_map.len() - 1)) {
        return Err(bad("block map does not end in a block boundary"));
    }
    let e = Encoded {
        n_keys: n_keys as u64,
        n_nodes: n_nodes as u64,
        prefix,
        fixed_len: fixed_len as u64,
        common_suffix,
        parens,
        labels,
        dense,
        bitmaps,
        terminal,
        suffix_map,
        suffix_bytes,
        block_map,
        blocks,
    };
    Ok(MashMeta::from_encoded(e, b.len()))
}

/// One pass over the DFUDS string: "(" then each node's degree in "(" and a ")"; checks the
/// parentheses balance exactly at the end, each node's child labels increase, every leaf is
/// terminal, and the suffix map gives a suffix only to leaves. With keys of one length
/// (`middle`: the length of the part the trie holds), every key must end at a leaf, at exactly
/// that depth (edges plus suffix): the lookup compares the shared tail only then.
fn check_shape(
    parens: &Bits,
    labels: &[u8],
    (dense, bitmaps): (&[u64], &[u8]),
    (terminal, suffix_map, n_keys): (&Bits, &Bits, usize),
    middle: Option<usize>,
) -> Result<()> {
    if parens.is_empty() {
        return Ok(());
    }
    if !parens.get(0) {
        return Err(bad("missing the leading parenthesis"));
    }
    let (mut excess, mut pos, mut node, mut label, mut key, mut spos) = (1i64, 1, 0, 0, 0, 0);
    let mut next_dense = 0;
    // Depth of the nodes still to visit: (children left, their depth), innermost last.
    let mut pending: Vec<(usize, usize)> = Vec::new();
    while pos < parens.len() {
        let start = pos;
        while pos < parens.len() && parens.get(pos) {
            pos += 1;
        }
        if pos == parens.len() {
            return Err(bad("a node without its closing parenthesis"));
        }
        let degree = pos - start;
        pos += 1;
        let depth = match pending.last_mut() {
            Some((left, d)) => {
                let d = *d;
                *left -= 1;
                if *left == 0 {
                    pending.pop();
                }
                d
            }
            None => 0,
        };
        if degree > 0 {
            pending.push((degree, depth + 1));
        }
        excess += degree as i64 - 1;
        // Only the last ")" may close the string: the tree is connected.
        if excess < 0 || (excess == 0 && pos != parens.len()) {
            return Err(bad("unbalanced parentheses"));
        }
        if dense.get(next_dense) == Some(&(node as u64)) {
            // One encoding per trie: a node is dense exactly when it has many children.
            let set = &bitmaps[32 * next_dense..32 * next_dense + 32];
            let ones: usize = set.iter().map(|b| b.count_ones() as usize).sum();
            if ones != degree || degree <= DENSE_DEGREE {
                return Err(bad("a dense node's label set disagrees with its degree"));
            }
            next_dense += 1;
        } else {
            if degree > DENSE_DEGREE {
                return Err(bad("a node with many children is not dense"));
            }
            let kids = labels
                .get(label..label + degree)
                .ok_or_else(|| bad("too few labels"))?;
            if kids.windows(2).any(|w| w[0] >= w[1]) {
                return Err(bad("child labels out of order"));
            }
            label += degree;
        }
        let term = terminal.get(node);
        if degree == 0 && !term {
            return Err(bad("a leaf that ends no key"));
        }
        if term {
            // This key's suffix length, in unary.
            let mut len = 0;
            while spos < suffix_map.len() && suffix_map.get(spos) {
                len += 1;
                spos += 1;
            }
            if spos == suffix_map.len() || key >= n_keys {
                return Err(bad("suffix map too short"));
            }
            spos += 1;
            key += 1;
            if len > 0 && degree > 0 {
                return Err(bad("a suffix on an inner node"));
            }
            if middle.is_some_and(|m| degree > 0 || depth + len != m) {
                return Err(bad("a key of the wrong length for a fixed-length trie"));
            }
        }
        node += 1;
    }
    if excess != 0
        || label != labels.len()
        || next_dense != dense.len()
        || node != terminal.len()
        || key != n_keys
    {
        return Err(bad("shape disagrees with the counts"));
    }
    Ok(())
}

/// Bits per block of the min-max tree behind `findclose`: a search scans up to two blocks, so
/// smaller blocks are faster at the price of a larger (in-memory only) tree.
const TREE_BLOCK: usize = 128;

/// The query structures over a decoded block.
pub struct Parts {
    /// The min-max tree over the parentheses, for `findclose` and the like.
    pub tree: BpTree<TREE_BLOCK>,
    /// 1 at dense nodes; and for the `k`-th dense node, the children of dense nodes before it
    /// (their labels are not in the label array).
    pub dense: RsVec,
    /// For the `k`-th dense node: the children of the dense nodes before it (entry `k`).
    pub dense_children_before: Vec<u32>,
    /// Rank and select over [`Encoded::parens`].
    pub parens: RsVec,
    /// Rank and select over [`Encoded::terminal`].
    pub terminal: RsVec,
    /// Rank and select over [`Encoded::suffix_map`].
    pub suffix_map: RsVec,
    /// Rank and select over [`Encoded::block_map`].
    pub block_map: RsVec,
}

/// Builds the query structures over `e`.
pub fn parts(e: &Encoded) -> Parts {
    let mut dense = Bits::default();
    let mut ids = e.dense.iter().peekable();
    for node in 0..e.n_nodes {
        let is = ids.peek() == Some(&&node);
        if is {
            ids.next();
        }
        dense.push(is);
    }
    let mut before = Vec::with_capacity(e.dense.len() + 1);
    let mut sum = 0u32;
    before.push(0);
    for set in e.bitmaps.chunks(32) {
        sum += set.iter().map(|b| b.count_ones()).sum::<u32>();
        before.push(sum);
    }
    Parts {
        dense: RsVec::from_bit_vec(dense.to_bitvec()),
        dense_children_before: before,
        tree: BpTree::<TREE_BLOCK>::from_bit_vector(e.parens.to_bitvec()),
        parens: RsVec::from_bit_vec(e.parens.to_bitvec()),
        terminal: RsVec::from_bit_vec(e.terminal.to_bitvec()),
        suffix_map: RsVec::from_bit_vec(e.suffix_map.to_bitvec()),
        block_map: RsVec::from_bit_vec(e.block_map.to_bitvec()),
    }
}
