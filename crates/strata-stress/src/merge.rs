//! The merge operator the stress workload writes with: operand `merge:<seq>` on key `i` turns
//! the key into `keys::value(i, seq)`, the value a put of the same write would have left — so a
//! merge is one more kind of write the oracle checks exactly as it checks puts, while every
//! read, flush and compaction folds operands through the engine's merge machinery.
//!
//! The newest operand wins whatever lies below it (a put, a deletion, nothing, older operands),
//! which makes the operator associative as the engine requires (partial merges keep the newest
//! operand). An operand is not a value `keys::decode_value` accepts, so an operand returned
//! as a value is a phantom, and an older operand winning is a lost write. Depends on `keys`.

use strata::merge::{MergeError, MergeOperator};

use crate::keys;

/// See the module docs.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewestWrite;

impl NewestWrite {
    /// The operator's name.
    pub const NAME: &'static str = "strata-stress.newest-write";

    /// The operand of the write with stress sequence `seq`.
    pub fn operand(seq: u64) -> Vec<u8> {
        format!("merge:{seq}").into_bytes()
    }

    fn seq(operand: &[u8]) -> Option<u64> {
        std::str::from_utf8(operand.strip_prefix(b"merge:")?)
            .ok()?
            .parse()
            .ok()
    }
}

impl MergeOperator for NewestWrite {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn full_merge(
        &self,
        key: &[u8],
        _existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, MergeError> {
        let i = keys::key_index(key)
            .ok_or_else(|| MergeError(format!("not a stress key: {:?}", keys::show(key))))?;
        let newest = operands.last().copied().unwrap_or_default();
        let seq = Self::seq(newest)
            .ok_or_else(|| MergeError(format!("not an operand: {:?}", keys::show(newest))))?;
        Ok(keys::value(i, seq))
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        operands.last().map(|o| o.to_vec())
    }

    fn check_operand(&self, operand: &[u8]) -> Result<(), MergeError> {
        Self::seq(operand)
            .map(|_| ())
            .ok_or_else(|| MergeError(format!("not an operand: {:?}", keys::show(operand))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_operand_becomes_the_value_and_operands_are_not_values() {
        let op = NewestWrite;
        let k = keys::key(42);
        let (a, b) = (NewestWrite::operand(7), NewestWrite::operand(9));
        for base in [None, Some(&keys::value(42, 3)[..])] {
            assert_eq!(
                op.full_merge(&k, base, &[&a, &b]).unwrap(),
                keys::value(42, 9)
            );
        }
        // Folding in steps gives what folding at once gives.
        let partial = op.partial_merge(&k, &[&a, &b]).unwrap();
        assert_eq!(
            op.full_merge(&k, None, &[&partial]).unwrap(),
            keys::value(42, 9)
        );
        let folded = op.full_merge(&k, None, &[&a]).unwrap();
        assert_eq!(
            op.full_merge(&k, Some(&folded), &[&b]).unwrap(),
            keys::value(42, 9)
        );
        assert_eq!(keys::decode_value(&a), None);
        assert!(op.check_operand(b"9").is_err());
        assert!(op.full_merge(b"other", None, &[&a]).is_err());
    }
}
