//! Replays the records of a log file held in memory. A record that fits one fragment (most of
//! them) is returned as a slice of the log's bytes; only a record spread over several blocks is
//! reassembled into an owned buffer.

use std::borrow::Cow;

use super::format::{fragment_crc, FragmentType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::{Error, Result};

/// How replay of a log ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Every byte was a valid record.
    Clean,
    /// A damaged suffix starting at `offset` was dropped as a torn tail.
    TornTail {
        /// Byte offset in the log where the damaged suffix starts.
        offset: u64,
        /// Bytes dropped: from `offset` to the end of the log.
        dropped: u64,
    },
}

/// Reads records from the bytes of one log file.
pub struct LogReader<'a> {
    data: &'a [u8],
    pos: usize,
    name: String,
    tolerate_tail: bool,
    outcome: ReadOutcome,
}

enum Frag<'a> {
    Ok(FragmentType, &'a [u8]),
    Padding,
    Eof,
    Bad(&'static str),
}

impl<'a> LogReader<'a> {
    /// `tolerate_tail`: whether this is the last log, whose damaged suffix may be a torn write.
    pub fn new(data: &'a [u8], name: impl Into<String>, tolerate_tail: bool) -> Self {
        LogReader {
            data,
            pos: 0,
            name: name.into(),
            tolerate_tail,
            outcome: ReadOutcome::Clean,
        }
    }

    /// A reader starting at byte `pos` of `data`, the end of a record an earlier reader of
    /// the same log returned (a follower reading a growing log, `replica::follow`).
    pub fn resume(
        data: &'a [u8],
        pos: usize,
        name: impl Into<String>,
        tolerate_tail: bool,
    ) -> Self {
        LogReader {
            pos,
            ..LogReader::new(data, name, tolerate_tail)
        }
    }

    /// Where the next record starts: the end of the last record returned, or, after a torn
    /// tail was dropped, where the damaged suffix starts (a follower resumes there once more
    /// bytes arrive).
    pub fn position(&self) -> usize {
        match self.outcome {
            ReadOutcome::TornTail { offset, .. } => offset as usize,
            ReadOutcome::Clean => self.pos,
        }
    }

    /// How the replay ended so far: [`ReadOutcome::Clean`] until a torn tail is dropped.
    pub fn outcome(&self) -> &ReadOutcome {
        &self.outcome
    }

    fn read_fragment(&self, pos: usize) -> (Frag<'a>, usize) {
        let block_left = BLOCK_SIZE - pos % BLOCK_SIZE;
        if pos >= self.data.len() {
            return (Frag::Eof, pos);
        }
        if block_left < HEADER_SIZE {
            return (Frag::Padding, pos + block_left);
        }
        let Some(h) = self.data.get(pos..pos + HEADER_SIZE) else {
            return (Frag::Bad("truncated fragment header"), pos);
        };
        let crc = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let len = u16::from_le_bytes([h[4], h[5]]) as usize;
        let ty = h[6];
        if ty == 0 && len == 0 && crc == 0 {
            // Zeros to the end of the block (or file) are padding or preallocated space; a zero
            // header followed by anything else is damage.
            let end = (pos + block_left).min(self.data.len());
            if self.data[pos..end].iter().all(|&b| b == 0) {
                return (Frag::Padding, pos + block_left);
            }
            return (Frag::Bad("zero fragment header followed by data"), pos);
        }
        if HEADER_SIZE + len > block_left {
            return (Frag::Bad("fragment crosses a block boundary"), pos);
        }
        let Some(payload) = self.data.get(pos + HEADER_SIZE..pos + HEADER_SIZE + len) else {
            return (Frag::Bad("truncated fragment payload"), pos);
        };
        // The type is checked before the checksum: `valid_record_after` tries every byte
        // offset, and most of them fail here without hashing up to a block of payload.
        let Some(t) = FragmentType::from_u8(ty) else {
            return (Frag::Bad("unknown fragment type"), pos);
        };
        if fragment_crc(ty, payload) != crc {
            return (Frag::Bad("fragment checksum mismatch"), pos);
        }
        (Frag::Ok(t, payload), pos + HEADER_SIZE + len)
    }

    /// Whether a valid record start (a Full or First fragment with a matching checksum) exists
    /// anywhere after `pos`. Damage followed by valid records is corruption, not a torn tail.
    /// Every byte offset is tried, so a damaged length field cannot hide later records; a false
    /// match needs a 32-bit checksum collision.
    fn valid_record_after(&self, pos: usize) -> bool {
        (pos + 1..self.data.len()).any(|p| {
            matches!(
                self.read_fragment(p).0,
                Frag::Ok(FragmentType::Full | FragmentType::First, _)
            )
        })
    }

    fn damaged(&mut self, at: usize, why: &str) -> Result<Option<Cow<'a, [u8]>>> {
        if self.tolerate_tail && !self.valid_record_after(at) {
            self.outcome = ReadOutcome::TornTail {
                offset: at as u64,
                dropped: (self.data.len() - at) as u64,
            };
            self.pos = self.data.len();
            return Ok(None);
        }
        Err(Error::corruption(format!(
            "{}: {why} at offset {at}",
            self.name
        )))
    }

    /// The next record, `None` at the end (or at a torn tail), or a corruption error.
    pub fn next_record(&mut self) -> Result<Option<Cow<'a, [u8]>>> {
        let mut record: Option<Vec<u8>> = None;
        let mut record_start = self.pos;
        loop {
            let (frag, next) = self.read_fragment(self.pos);
            match frag {
                Frag::Eof => {
                    if record.is_some() {
                        return self.damaged(record_start, "record truncated at end of log");
                    }
                    return Ok(None);
                }
                Frag::Padding => self.pos = next,
                Frag::Bad(why) => {
                    let at = if record.is_some() {
                        record_start
                    } else {
                        self.pos
                    };
                    return self.damaged(at, why);
                }
                Frag::Ok(ty, payload) => {
                    match (ty, record.as_mut()) {
                        (FragmentType::Full, None) => {
                            self.pos = next;
                            return Ok(Some(Cow::Borrowed(payload)));
                        }
                        (FragmentType::First, None) => {
                            record_start = self.pos;
                            record = Some(payload.to_vec());
                        }
                        (FragmentType::Middle, Some(r)) => r.extend_from_slice(payload),
                        (FragmentType::Last, Some(r)) => {
                            r.extend_from_slice(payload);
                            self.pos = next;
                            return Ok(record.map(Cow::Owned));
                        }
                        _ => {
                            let at = if record.is_some() {
                                record_start
                            } else {
                                self.pos
                            };
                            return self.damaged(at, "fragment out of sequence");
                        }
                    }
                    self.pos = next;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::LogWriter;
    use super::*;
    use crate::storage::{LocalFs, Storage};

    fn write_log(records: &[Vec<u8>]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        let mut w = LogWriter::new(LocalFs.create(&p).unwrap(), 1);
        for r in records {
            w.add_record(r).unwrap();
        }
        w.sync().unwrap();
        LocalFs.read_all(&p).unwrap()
    }

    fn read_all(data: &[u8], tail: bool) -> Result<Vec<Vec<u8>>> {
        let mut r = LogReader::new(data, "log", tail);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec.into_owned());
        }
        Ok(out)
    }

    fn records() -> Vec<Vec<u8>> {
        (0..200u32)
            .map(|i| vec![(i % 251) as u8; (i as usize * 997) % 70_000])
            .collect()
    }

    #[test]
    fn roundtrip_across_blocks() {
        let recs = records();
        let data = write_log(&recs);
        assert_eq!(read_all(&data, false).unwrap(), recs);
    }

    #[test]
    fn torn_tail_is_dropped_only_in_last_log() {
        let recs = records();
        let data = write_log(&recs);
        for cut in [data.len() - 1, data.len() - 5000, data.len() - 40_000] {
            let got = read_all(&data[..cut], true).unwrap();
            assert!(got.len() < recs.len());
            assert_eq!(&recs[..got.len()], &got[..]);
            assert!(read_all(&data[..cut], false).is_err());
        }
    }

    #[test]
    fn corruption_in_the_middle_is_reported() {
        let recs = records();
        let mut data = write_log(&recs);
        data[100] ^= 1;
        let err = read_all(&data, true).unwrap_err();
        assert!(err.is_corruption(), "{err}");
    }

    #[test]
    fn every_single_byte_flip_is_detected_or_tail() {
        let recs: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 300]).collect();
        let data = write_log(&recs);
        for i in 0..data.len() {
            let mut d = data.clone();
            d[i] ^= 0x40;
            match read_all(&d, true) {
                Err(e) => assert!(e.is_corruption()),
                Ok(got) => {
                    // Only a damaged final record may be dropped; nothing else changes.
                    assert_eq!(&recs[..got.len()], &got[..], "flip at {i}");
                    assert!(got.len() >= recs.len() - 1, "flip at {i}");
                }
            }
        }
    }
}
