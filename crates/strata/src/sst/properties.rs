//! Table properties: counts and sizes recorded when a table is built, stored as a block of
//! `name -> varint` entries in bytewise name order. Unknown names are ignored on read, so later
//! releases may add properties.

use bytes::Bytes;

use super::block::{Block, BlockBuilder};
use crate::coding::{decode_varint64, put_varint64};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::types::{compare_bytewise, SeqNo};

/// What a table holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Point entries (puts and deletions).
    pub num_entries: u64,
    /// Point deletions.
    pub num_deletions: u64,
    /// Range tombstones.
    pub num_range_deletions: u64,
    /// Data blocks.
    pub num_data_blocks: u64,
    /// Bytes of the point entries' internal keys, before prefix compression.
    pub raw_key_size: u64,
    /// Bytes of the point entries' values, before compression.
    pub raw_value_size: u64,
    /// Bytes of the data blocks as stored (compressed), trailers excluded.
    pub data_size: u64,
    /// Bytes of the index block or MashMeta block, trailer excluded.
    pub index_size: u64,
    /// Bytes of the bloom filter, trailer excluded (0: none).
    pub filter_size: u64,
    /// 0: a block index (and maybe a bloom filter); 1: a MashMeta trie (`index_size` bytes).
    pub index_type: u64,
    /// 0 none, 1 lz4, 2 zstd: the compression requested for data blocks.
    pub compression: u64,
    /// The smallest sequence number of any entry or range tombstone (0 for an empty table).
    pub smallest_seq: SeqNo,
    /// The largest sequence number of any entry or range tombstone (0 for an empty table).
    pub largest_seq: SeqNo,
}

macro_rules! props {
    ($m:ident) => {
        $m!(
            "strata.compression" => compression,
            "strata.data.size" => data_size,
            "strata.filter.size" => filter_size,
            "strata.index.size" => index_size,
            "strata.index.type" => index_type,
            "strata.largest.seq" => largest_seq,
            "strata.num.data.blocks" => num_data_blocks,
            "strata.num.deletions" => num_deletions,
            "strata.num.entries" => num_entries,
            "strata.num.range.deletions" => num_range_deletions,
            "strata.raw.key.size" => raw_key_size,
            "strata.raw.value.size" => raw_value_size,
            "strata.smallest.seq" => smallest_seq
        )
    };
}

impl TableProperties {
    /// The properties block: a `name -> varint` entry per property, in name order.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        let mut v = Vec::new();
        macro_rules! enc {
            ($($name:literal => $f:ident),*) => {
                $( v.clear(); put_varint64(&mut v, self.$f); b.add($name.as_bytes(), &v); )*
            };
        }
        props!(enc);
        b.finish()
    }

    /// Decodes a properties block; unknown names are ignored and missing ones read as 0. Fails
    /// (corruption) if the block or a value is malformed.
    pub fn decode(block: Bytes) -> Result<Self> {
        let block = Block::new(block)?;
        let mut it = block.iter(compare_bytewise);
        let mut p = TableProperties::default();
        it.seek_to_first();
        while it.valid() {
            let val = decode_varint64(it.value())
                .ok_or_else(|| Error::corruption("malformed table property"))?
                .0;
            macro_rules! dec {
                ($($name:literal => $f:ident),*) => {
                    match it.key() {
                        $( k if k == $name.as_bytes() => p.$f = val, )*
                        _ => {}
                    }
                };
            }
            props!(dec);
            it.next();
        }
        it.status()?;
        Ok(p)
    }
}
