//! Iterates a sorted run of tables as one stream, opening each table only when reached.

use std::sync::Arc;

use super::InternalIterator;
use crate::cache::TableCache;
use crate::error::{Error, Result};
use crate::sst::TableIter;
use crate::types::user_key;
use crate::version::TableFile;

/// Iterates a sorted run (tables in key order, not overlapping) as one stream, opening each table
/// through the table cache only when reached.
pub struct RunIterator {
    files: Vec<Arc<TableFile>>,
    tables: Arc<TableCache>,
    fill_cache: bool,
    cache_only: bool,
    index: usize,
    cur: Option<TableIter>,
    err: Option<Error>,
}

impl RunIterator {
    /// Iterates `files`, sorted by key, opened through `tables`; with `fill_cache` the data blocks
    /// read are inserted into the block cache.
    pub fn new(files: Vec<Arc<TableFile>>, tables: Arc<TableCache>, fill_cache: bool) -> Self {
        RunIterator {
            index: files.len(),
            files,
            tables,
            fill_cache,
            cache_only: false,
            cur: None,
            err: None,
        }
    }

    /// Reads only tables already open and blocks already cached: anything else stops the
    /// iterator with `ErrorKind::Incomplete`.
    pub fn cache_only(mut self) -> Self {
        self.cache_only = true;
        self
    }

    fn open(&mut self, i: usize) -> bool {
        self.cur = None;
        self.index = i;
        if i >= self.files.len() {
            return false;
        }
        let table = if self.cache_only {
            self.tables
                .get_cached(&self.files[i].meta)
                .ok_or_else(|| Error::from(crate::error::ErrorRepr::Incomplete("table not open")))
        } else {
            self.tables.get(&self.files[i].meta)
        };
        match table {
            Ok(t) => {
                self.cur = Some(t.iter_opt(self.fill_cache, self.cache_only));
                true
            }
            Err(e) => {
                self.err = Some(e);
                false
            }
        }
    }

    fn cur_valid(&mut self) -> bool {
        match &self.cur {
            Some(c) if c.valid() => true,
            Some(c) => {
                if let Err(e) = c.status() {
                    self.err = Some(e);
                }
                false
            }
            None => false,
        }
    }

    fn skip_forward(&mut self) {
        while self.err.is_none() && self.cur.is_some() && !self.cur_valid() {
            if self.err.is_some() || !self.open(self.index + 1) {
                self.cur = None;
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while self.err.is_none() && self.cur.is_some() && !self.cur_valid() {
            if self.err.is_some() || self.index == 0 || !self.open(self.index - 1) {
                self.cur = None;
                return;
            }
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
        }
    }
}

impl InternalIterator for RunIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.cur.as_ref().is_some_and(|c| c.valid())
    }
    fn seek_to_first(&mut self) {
        if self.open(0) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_first();
            }
        }
        self.skip_forward();
    }
    fn seek_to_last(&mut self) {
        if !self.files.is_empty() && self.open(self.files.len() - 1) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_to_last();
            }
        }
        self.skip_backward();
    }
    fn seek(&mut self, target: &[u8]) {
        let uk = user_key(target);
        let i = self.files.partition_point(|f| f.ends_before(uk));
        if self.open(i) {
            if let Some(c) = self.cur.as_mut() {
                c.seek(target);
            }
        }
        self.skip_forward();
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        let uk = user_key(target);
        // Last file that starts at or before the target's user key.
        let i = self.files.partition_point(|f| f.smallest.as_slice() <= uk);
        if i == 0 {
            self.cur = None;
            return;
        }
        if self.open(i - 1) {
            if let Some(c) = self.cur.as_mut() {
                c.seek_for_prev(target);
            }
        }
        self.skip_backward();
    }
    fn next(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.next();
        }
        self.skip_forward();
    }
    fn prev(&mut self) {
        if let Some(c) = self.cur.as_mut() {
            c.prev();
        }
        self.skip_backward();
    }
    fn key(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.key()).unwrap_or(&[])
    }
    fn value(&self) -> &[u8] {
        self.cur.as_ref().map(|c| c.value()).unwrap_or(&[])
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
