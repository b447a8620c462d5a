//! The merge operator: read-modify-write without the read (RocksDB's `MergeOperator`).
//!
//! `Db::merge(key, operand)` appends an *operand* record (kind `Merge`) instead of a value. A
//! read of the key collects the operands above the key's newest value (or deletion, or the end
//! of its history) and asks the operator for the result: [`MergeOperator::full_merge`] of the
//! base value and the operands, oldest first. Compaction does the same where it may (the base
//! is in its inputs and no snapshot separates them, or nothing older can exist below the
//! output level) and otherwise combines runs of operands with the optional
//! [`MergeOperator::partial_merge`], so the operand stack a read must fold stays short.
//!
//! Invariants: an operand is never returned as a value; a merge result carries the sequence
//! number of its newest operand; operands of different snapshot stripes are never combined.
//! The operator must be deterministic and the same for the life of the database (its name is
//! how a compaction worker rebuilds it, [`from_name`]): operands written under one operator and
//! read under another are not detected. Depends on nothing but `error`.

mod operators;

use std::sync::Arc;

pub use operators::{Append, Max, U64Add};

/// Why an operator could not merge (a malformed operand or base value). Reads and compactions
/// of the key fail with `ErrorKind::Corruption` carrying the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError(pub String);

impl std::fmt::Display for MergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A user-supplied merge operator; see the module docs for the contract.
pub trait MergeOperator: Send + Sync {
    /// A stable name: recorded with remote compaction jobs, where a worker rebuilds the
    /// operator by it ([`from_name`] for the built-in ones, or the worker's own registry).
    fn name(&self) -> &str;

    /// The value `existing` (`None`: the key had no value or was deleted) becomes after
    /// `operands`, oldest first (never empty).
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, MergeError>;

    /// One operand equivalent to `operands` (oldest first, at least two), if the operator can
    /// combine operands without the base value; `None` (the default) keeps them apart.
    fn partial_merge(&self, _key: &[u8], _operands: &[&[u8]]) -> Option<Vec<u8>> {
        None
    }

    /// Checks an operand when it is written (`Db::merge`, `WriteBatch::merge` at commit), so a
    /// malformed one is refused with `ErrorKind::InvalidArgument` instead of failing every
    /// later read and compaction of its key. The default accepts everything.
    fn check_operand(&self, _operand: &[u8]) -> Result<(), MergeError> {
        Ok(())
    }
}

/// A built-in operator by its [`MergeOperator::name`]: `strata.u64add`, `strata.max`,
/// `strata.append` (delimiter `,`) or `strata.append:<hex bytes>` (any delimiter, empty
/// allowed).
pub fn from_name(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match name {
        U64Add::NAME => Some(Arc::new(U64Add)),
        Max::NAME => Some(Arc::new(Max)),
        _ => Append::from_name(name).map(|a| Arc::new(a) as Arc<dyn MergeOperator>),
    }
}

/// A key for an error message, bytes outside printable ASCII escaped.
fn show(key: &[u8]) -> String {
    format!("\"{}\"", key.escape_ascii())
}

/// The error of a read or compaction that met operands with no operator configured.
pub(crate) fn missing_operator(key: &[u8]) -> crate::Error {
    crate::Error::invalid(format!(
        "key {} has merge operands but no merge operator is configured \
         (Options::merge_operator)",
        show(key)
    ))
}

/// `operator.full_merge` of `base` and `newest_first` (operands newest first, as an internal
/// iterator meets them); a failure is `Corruption`.
pub(crate) fn full_merge(
    op: &dyn MergeOperator,
    key: &[u8],
    base: Option<&[u8]>,
    newest_first: &[Vec<u8>],
) -> crate::Result<Vec<u8>> {
    let ops: Vec<&[u8]> = newest_first.iter().rev().map(Vec::as_slice).collect();
    op.full_merge(key, base, &ops).map_err(|e| {
        crate::Error::corruption(format!(
            "merge operator {} failed on key {}: {e}",
            op.name(),
            show(key)
        ))
    })
}

/// `operator.partial_merge` of `newest_first` (at least two operands, newest first).
pub(crate) fn partial_merge(
    op: &dyn MergeOperator,
    key: &[u8],
    newest_first: &[Vec<u8>],
) -> Option<Vec<u8>> {
    let ops: Vec<&[u8]> = newest_first.iter().rev().map(Vec::as_slice).collect();
    op.partial_merge(key, &ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_ins_are_found_by_name() {
        for op in [
            Arc::new(U64Add) as Arc<dyn MergeOperator>,
            Arc::new(Max),
            Arc::new(Append::new(b",")),
            Arc::new(Append::new(b"")),
            Arc::new(Append::new(b"\n\x00")),
        ] {
            let back = from_name(op.name()).unwrap_or_else(|| panic!("{}", op.name()));
            assert_eq!(back.name(), op.name());
            let ops: [&[u8]; 2] = [&7u64.to_le_bytes(), &9u64.to_le_bytes()];
            assert_eq!(
                back.full_merge(b"k", None, &ops),
                op.full_merge(b"k", None, &ops)
            );
        }
        assert!(from_name("no.such.operator").is_none());
        assert!(from_name("strata.append:zz").is_none());
    }

    #[test]
    fn helpers_take_operands_newest_first() {
        let op = Append::new(b"+");
        let newest_first = vec![b"c".to_vec(), b"b".to_vec()];
        assert_eq!(
            full_merge(&op, b"k", Some(b"a"), &newest_first).unwrap(),
            b"a+b+c"
        );
        assert_eq!(
            partial_merge(&op, b"k", &newest_first).unwrap(),
            b"b+c".to_vec()
        );
        let e = full_merge(&U64Add, b"k", Some(b"bad"), &[vec![1; 8]]).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corruption);
        assert!(e.to_string().contains("strata.u64add"), "{e}");
    }
}
