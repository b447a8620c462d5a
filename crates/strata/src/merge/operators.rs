//! The built-in merge operators: a 64-bit counter, a bytewise maximum and an append with a
//! delimiter. Each one's partial merge is exact, so compaction keeps at most one operand per
//! key and snapshot stripe. Depends only on the trait.

use super::{MergeError, MergeOperator};

/// A counter: values and operands are 8-byte little-endian `u64`s (RocksDB's
/// `UInt64AddOperator` layout), added with wrap-around; a missing base counts as 0. Operands
/// of another length are refused when written; a stored base of another length fails the
/// merge.
#[derive(Clone, Copy, Debug, Default)]
pub struct U64Add;

impl U64Add {
    /// The operator's name.
    pub const NAME: &'static str = "strata.u64add";

    /// The operand (or value) encoding `n`.
    pub fn encode(n: u64) -> [u8; 8] {
        n.to_le_bytes()
    }

    /// The counter a value holds; `None` if it is not 8 bytes.
    pub fn decode(v: &[u8]) -> Option<u64> {
        Some(u64::from_le_bytes(v.try_into().ok()?))
    }

    fn sum(operands: &[&[u8]]) -> Result<u64, MergeError> {
        operands.iter().try_fold(0u64, |acc, o| {
            let n = Self::decode(o).ok_or_else(|| bad_len("operand", o))?;
            Ok(acc.wrapping_add(n))
        })
    }
}

fn bad_len(what: &str, v: &[u8]) -> MergeError {
    MergeError(format!(
        "{what} of {} bytes is not an 8-byte little-endian u64",
        v.len()
    ))
}

impl MergeOperator for U64Add {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, MergeError> {
        let base = match existing {
            Some(v) => Self::decode(v).ok_or_else(|| bad_len("value", v))?,
            None => 0,
        };
        Ok(base
            .wrapping_add(Self::sum(operands)?)
            .to_le_bytes()
            .to_vec())
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(Self::sum(operands).ok()?.to_le_bytes().to_vec())
    }

    fn check_operand(&self, operand: &[u8]) -> Result<(), MergeError> {
        Self::decode(operand)
            .map(|_| ())
            .ok_or_else(|| bad_len("operand", operand))
    }
}

/// The bytewise greatest of the base value and the operands.
#[derive(Clone, Copy, Debug, Default)]
pub struct Max;

impl Max {
    /// The operator's name.
    pub const NAME: &'static str = "strata.max";
}

impl MergeOperator for Max {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, MergeError> {
        let max = operands.iter().copied().chain(existing).max();
        Ok(max.unwrap_or_default().to_vec())
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        operands.iter().max().map(|m| m.to_vec())
    }
}

/// Appends each operand to the value, separated by a delimiter (none before the first part
/// when the key had no value).
#[derive(Clone, Debug)]
pub struct Append {
    delimiter: Vec<u8>,
    name: String,
}

impl Append {
    /// The name with the default delimiter `,`; other delimiters are `strata.append:<hex>`.
    pub const NAME: &'static str = "strata.append";

    /// Appends with `delimiter` between parts.
    pub fn new(delimiter: &[u8]) -> Self {
        let name = if delimiter == b"," {
            Self::NAME.to_string()
        } else {
            let hex: String = delimiter.iter().map(|b| format!("{b:02x}")).collect();
            format!("{}:{hex}", Self::NAME)
        };
        Append {
            delimiter: delimiter.to_vec(),
            name,
        }
    }

    pub(super) fn from_name(name: &str) -> Option<Append> {
        if name == Self::NAME {
            return Some(Append::new(b","));
        }
        let hex = name.strip_prefix(Self::NAME)?.strip_prefix(':')?;
        if hex.len() % 2 != 0 {
            return None;
        }
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()?;
        Some(Append::new(&bytes))
    }

    fn join(&self, parts: &[&[u8]]) -> Vec<u8> {
        let len = parts.iter().map(|p| p.len() + self.delimiter.len()).sum();
        let mut out = Vec::with_capacity(len);
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.delimiter);
            }
            out.extend_from_slice(p);
        }
        out
    }
}

impl MergeOperator for Append {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> Result<Vec<u8>, MergeError> {
        let parts: Vec<&[u8]> = existing
            .into_iter()
            .chain(operands.iter().copied())
            .collect();
        Ok(self.join(&parts))
    }

    fn partial_merge(&self, _key: &[u8], operands: &[&[u8]]) -> Option<Vec<u8>> {
        Some(self.join(operands))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every way of splitting operands into a partial merge and a full merge gives the full
    /// merge of them all: compaction may combine any run of operands.
    #[test]
    fn partial_merges_agree_with_full_merges() {
        let ops: Vec<Box<dyn MergeOperator>> = vec![
            Box::new(U64Add),
            Box::new(Max),
            Box::new(Append::new(b",")),
            Box::new(Append::new(b"")),
        ];
        let operands: Vec<Vec<u8>> = [5u64, u64::MAX, 3, 40]
            .iter()
            .map(|n| n.to_le_bytes().to_vec())
            .collect();
        let refs: Vec<&[u8]> = operands.iter().map(Vec::as_slice).collect();
        let base = 11u64.to_le_bytes();
        for op in &ops {
            for existing in [None, Some(&base[..])] {
                let whole = op.full_merge(b"k", existing, &refs).unwrap();
                for i in 0..refs.len() {
                    for j in i + 2..=refs.len() {
                        let combined = op.partial_merge(b"k", &refs[i..j]).unwrap();
                        let mut split: Vec<&[u8]> = refs[..i].to_vec();
                        split.push(&combined);
                        split.extend_from_slice(&refs[j..]);
                        assert_eq!(
                            op.full_merge(b"k", existing, &split).unwrap(),
                            whole,
                            "{} combining {i}..{j}",
                            op.name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn each_operator_computes_its_result() {
        let n = |x: u64| x.to_le_bytes().to_vec();
        // (operator, base, operands oldest first, result or error)
        type Case = (
            Box<dyn MergeOperator>,
            Option<Vec<u8>>,
            Vec<Vec<u8>>,
            Result<Vec<u8>, ()>,
        );
        let cases: Vec<Case> = vec![
            (Box::new(U64Add), None, vec![n(1), n(2)], Ok(n(3))),
            (Box::new(U64Add), Some(n(10)), vec![n(5)], Ok(n(15))),
            (Box::new(U64Add), Some(n(u64::MAX)), vec![n(2)], Ok(n(1))),
            (Box::new(U64Add), Some(b"x".to_vec()), vec![n(2)], Err(())),
            (Box::new(U64Add), None, vec![b"short".to_vec()], Err(())),
            (
                Box::new(Max),
                Some(b"m".to_vec()),
                vec![b"a".to_vec(), b"z".to_vec()],
                Ok(b"z".to_vec()),
            ),
            (
                Box::new(Max),
                Some(b"zz".to_vec()),
                vec![b"a".to_vec()],
                Ok(b"zz".to_vec()),
            ),
            (
                Box::new(Append::new(b",")),
                None,
                vec![b"a".to_vec(), b"b".to_vec()],
                Ok(b"a,b".to_vec()),
            ),
            (
                Box::new(Append::new(b"--")),
                Some(b"x".to_vec()),
                vec![b"y".to_vec()],
                Ok(b"x--y".to_vec()),
            ),
            (
                Box::new(Append::new(b",")),
                Some(Vec::new()),
                vec![b"y".to_vec()],
                Ok(b",y".to_vec()),
            ),
        ];
        for (i, (op, base, operands, want)) in cases.into_iter().enumerate() {
            let refs: Vec<&[u8]> = operands.iter().map(Vec::as_slice).collect();
            let got = op.full_merge(b"k", base.as_deref(), &refs).map_err(|_| ());
            assert_eq!(got, want, "case {i} ({})", op.name());
        }
        assert!(U64Add.check_operand(&n(1)).is_ok());
        assert!(U64Add.check_operand(b"1").is_err());
        assert!(Max.check_operand(b"anything").is_ok());
    }
}
