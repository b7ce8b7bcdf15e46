//! Bounded reading of ZIP containers (DOCX, XLSX, ODS).
//!
//! Declared sizes in a ZIP directory can lie, so every read is capped by what is actually
//! decompressed: a per-archive byte budget and a per-entry compression-ratio check.

use std::io::{Cursor, Read};

use zip::ZipArchive;

use crate::{Limits, ParseError};

/// An opened ZIP archive with a decompression budget.
pub(crate) struct BoundedZip<'a> {
    archive: ZipArchive<Cursor<&'a [u8]>>,
    format: &'static str,
    budget: u64,
    max_ratio: u64,
}

impl std::fmt::Debug for BoundedZip<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundedZip")
            .field("format", &self.format)
            .field("budget", &self.budget)
            .finish()
    }
}

impl<'a> BoundedZip<'a> {
    /// Opens `bytes` as a ZIP archive; `format` names the expected format in errors.
    pub(crate) fn open(
        bytes: &'a [u8],
        format: &'static str,
        limits: &Limits,
    ) -> Result<BoundedZip<'a>, ParseError> {
        let archive = ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| ParseError::invalid(format, format!("not a ZIP container ({e})")))?;
        Ok(BoundedZip {
            archive,
            format,
            budget: limits.max_decompressed_bytes,
            max_ratio: limits.max_compression_ratio.max(1),
        })
    }

    /// Names of all entries.
    pub(crate) fn names(&self) -> Vec<String> {
        self.archive
            .file_names()
            .filter_map(|n| n.ok().map(|n| n.into_owned()))
            .collect()
    }

    /// Whether an entry exists (exact name).
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.archive.index_for_name(name).is_some()
    }

    /// Reads one entry fully, or `Ok(None)` if it does not exist.
    ///
    /// Fails with [`ParseError::LimitExceeded`] when the entry decompresses past the remaining
    /// budget or past the allowed compression ratio (a zip bomb).
    pub(crate) fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, ParseError> {
        let Some(index) = self.archive.index_for_name(name) else {
            return Ok(None);
        };
        let format = self.format;
        let mut entry = self
            .archive
            .by_index(index)
            .map_err(|e| ParseError::invalid(format, format!("cannot read '{name}' ({e})")))?;
        if entry.encrypted() {
            return Err(ParseError::PasswordRequired);
        }
        let compressed = entry.compressed_size().max(1);
        // Small parts compress extremely well legitimately (a 1 KB run of spaces), so the ratio
        // check only applies beyond a floor.
        let ratio_cap = compressed
            .saturating_mul(self.max_ratio)
            .max(8 * 1024 * 1024);
        let cap = self.budget.min(ratio_cap);
        let mut out = Vec::with_capacity(entry.size().min(cap).min(64 * 1024 * 1024) as usize);
        let read = (&mut entry)
            .take(cap.saturating_add(1))
            .read_to_end(&mut out)
            .map_err(|e| ParseError::invalid(format, format!("corrupt entry '{name}' ({e})")))?;
        if read as u64 > cap {
            return Err(ParseError::LimitExceeded(format!(
                "'{name}' decompresses to more than {cap} bytes (possible zip bomb)"
            )));
        }
        self.budget = self.budget.saturating_sub(read as u64);
        Ok(Some(out))
    }
}

/// Checks a ZIP container's directory against the limits without decompressing anything:
/// used before handing a file to a library that reads the archive itself.
pub(crate) fn check_zip_directory(
    bytes: &[u8],
    format: &'static str,
    limits: &Limits,
) -> Result<(), ParseError> {
    let mut archive = ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ParseError::invalid(format, format!("not a ZIP container ({e})")))?;
    let mut total: u64 = 0;
    for i in 0..archive.len() {
        let entry = archive
            .by_index_raw(i)
            .map_err(|e| ParseError::invalid(format, format!("corrupt ZIP directory ({e})")))?;
        if entry.encrypted() {
            return Err(ParseError::PasswordRequired);
        }
        let size = entry.size();
        let ratio_cap = entry
            .compressed_size()
            .max(1)
            .saturating_mul(limits.max_compression_ratio)
            .max(8 << 20);
        if size > ratio_cap {
            return Err(ParseError::LimitExceeded(format!(
                "'{}' declares {size} bytes from {} compressed (possible zip bomb)",
                entry.name().unwrap_or_default(),
                entry.compressed_size()
            )));
        }
        total = total.saturating_add(size);
    }
    if total > limits.max_decompressed_bytes {
        return Err(ParseError::LimitExceeded(format!(
            "archive declares {total} decompressed bytes (limit {})",
            limits.max_decompressed_bytes
        )));
    }
    Ok(())
}
