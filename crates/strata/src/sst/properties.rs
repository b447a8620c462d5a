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
    pub num_entries: u64,
    pub num_deletions: u64,
    pub num_range_deletions: u64,
    pub num_data_blocks: u64,
    pub raw_key_size: u64,
    pub raw_value_size: u64,
    pub data_size: u64,
    pub index_size: u64,
    pub filter_size: u64,
    /// 0: a block index (and maybe a bloom filter); 1: a MashMeta trie (`index_size` bytes).
    pub index_type: u64,
    /// 0 none, 1 lz4, 2 zstd: the compression requested for data blocks.
    pub compression: u64,
    pub smallest_seq: SeqNo,
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
