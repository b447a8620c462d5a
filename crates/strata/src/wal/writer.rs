//! Appends records to a log file.

use super::format::{fragment_crc, FragmentType, BLOCK_SIZE, HEADER_SIZE};
use crate::error::Result;
use std::sync::Arc;

use crate::storage::{FileSync, WritableFile};

/// Writes log records; see the module docs for the format.
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    block_offset: usize,
    number: u64,
    buf: Vec<u8>,
}

impl LogWriter {
    /// Wraps a freshly created (empty) file. `number` is the file number, for diagnostics.
    pub fn new(file: Box<dyn WritableFile>, number: u64) -> Self {
        let block_offset = (file.len() % BLOCK_SIZE as u64) as usize;
        LogWriter {
            file,
            block_offset,
            number,
            buf: Vec::with_capacity(BLOCK_SIZE),
        }
    }

    /// The log's file number.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.file.len() + self.buf.len() as u64
    }

    /// Whether nothing has been written to the log.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one record and hands it to the OS (a process crash cannot lose it afterwards).
    pub fn add_record(&mut self, payload: &[u8]) -> Result<()> {
        self.buf.clear();
        let mut rest = payload;
        let mut first = true;
        loop {
            let left = BLOCK_SIZE - self.block_offset;
            if left < HEADER_SIZE {
                self.buf.extend(std::iter::repeat_n(0u8, left));
                self.block_offset = 0;
                continue;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let n = rest.len().min(avail);
            let last = n == rest.len();
            let ty = match (first, last) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, true) => FragmentType::Last,
                (false, false) => FragmentType::Middle,
            } as u8;
            let frag = &rest[..n];
            self.buf
                .extend_from_slice(&fragment_crc(ty, frag).to_le_bytes());
            self.buf.extend_from_slice(&(n as u16).to_le_bytes());
            self.buf.push(ty);
            self.buf.extend_from_slice(frag);
            self.block_offset += HEADER_SIZE + n;
            rest = &rest[n..];
            first = false;
            if last {
                break;
            }
        }
        self.file.append(&self.buf)?;
        self.buf.clear();
        self.file.flush()
    }

    /// Makes everything appended so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// A handle whose `sync_data` makes every record added so far durable, usable after the
    /// writer's lock is released (records are handed to the OS as they are added); `None` if
    /// the file cannot sync that way. See [`WritableFile::sync_handle`].
    pub fn sync_handle(&self) -> Option<Arc<dyn FileSync>> {
        self.file.sync_handle()
    }
}
