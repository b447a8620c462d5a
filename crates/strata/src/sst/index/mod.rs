//! A table's index: which data block to read for a key.
//!
//! Two kinds, chosen per table when it is written and recorded in its footer version:
//! - [`IndexKind::Block`]: an index block of separator internal keys (one per data block), with
//!   a bloom filter beside it. Every fast-tier table, and capacity tables with
//!   `capacity_index = block`.
//! - [`IndexKind::MashMeta`]: the succinct trie of [`trie`], exact membership and block number
//!   in one structure, no bloom filter. Capacity tables with `capacity_index = mashmeta`.
//!
//! [`IndexCursor`] walks either kind block by block for the two-level table iterator.
//! Depends on `sst::block`, `sst::format`, `types`; never on `db`.

pub mod trie;

use std::sync::Arc;

use super::block::{Block, BlockIter};
use super::format::BlockHandle;
use crate::error::Result;
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
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Block => "block",
            IndexKind::MashMeta => "mashmeta",
            IndexKind::Auto => "auto",
        }
    }

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
    Blocks(Block),
    Trie(Arc<MashMeta>),
}

impl TableIndex {
    pub fn cursor(&self) -> IndexCursor {
        match self {
            TableIndex::Blocks(b) => IndexCursor::Blocks(b.iter(compare_internal)),
            TableIndex::Trie(t) => IndexCursor::Trie {
                trie: t.clone(),
                at: None,
            },
        }
    }

    pub fn kind(&self) -> IndexKind {
        match self {
            TableIndex::Blocks(_) => IndexKind::Block,
            TableIndex::Trie(_) => IndexKind::MashMeta,
        }
    }
}

/// A position among a table's data blocks.
pub enum IndexCursor {
    Blocks(BlockIter),
    Trie {
        trie: Arc<MashMeta>,
        at: Option<usize>,
    },
}

impl IndexCursor {
    pub fn valid(&self) -> bool {
        match self {
            IndexCursor::Blocks(it) => it.valid(),
            IndexCursor::Trie { at, .. } => at.is_some(),
        }
    }

    pub fn seek_to_first(&mut self) {
        match self {
            IndexCursor::Blocks(it) => it.seek_to_first(),
            IndexCursor::Trie { trie, at } => *at = (trie.num_blocks() > 0).then_some(0),
        }
    }

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

    pub fn next(&mut self) {
        match self {
            IndexCursor::Blocks(it) => it.next(),
            IndexCursor::Trie { trie, at } => {
                *at = at.map(|i| i + 1).filter(|&i| i < trie.num_blocks())
            }
        }
    }

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
