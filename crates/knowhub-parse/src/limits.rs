use serde::{Deserialize, Serialize};

/// Structural bounds every parser enforces, so hostile files (zip bombs, billion-cell sheets,
/// endless page trees) fail cleanly instead of exhausting memory. Wall-clock time and total
/// memory are bounded by the process that runs the parser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Largest input file accepted.
    pub max_file_bytes: u64,
    /// Largest total of decompressed bytes read from an archive (DOCX/XLSX parts).
    pub max_decompressed_bytes: u64,
    /// Largest decompressed-to-compressed ratio accepted for one archive entry.
    pub max_compression_ratio: u64,
    /// Largest amount of extracted text kept; the rest is dropped with a notice.
    pub max_text_bytes: usize,
    /// Most pages read from a PDF.
    pub max_pages: u32,
    /// Most spreadsheet cells read across all sheets.
    pub max_cells: u64,
    /// Deepest XML element nesting accepted.
    pub max_xml_depth: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_bytes: 512 * 1024 * 1024,
            max_decompressed_bytes: 1024 * 1024 * 1024,
            max_compression_ratio: 200,
            max_text_bytes: 64 * 1024 * 1024,
            max_pages: 20_000,
            max_cells: 10_000_000,
            max_xml_depth: 512,
        }
    }
}
