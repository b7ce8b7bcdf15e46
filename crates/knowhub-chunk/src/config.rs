//! Chunk sizing parameters.

use serde::{Deserialize, Serialize};

/// Sizes, in tokens as counted by the [`TokenCounter`](crate::TokenCounter) in use.
///
/// Every size counts the whole chunk text, overlap included, because that is what the
/// embedding model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChunkConfig {
    /// Chunks are filled up to about this size.
    pub target_tokens: usize,
    /// Hard upper bound (the embedding model's input limit); no chunk exceeds it.
    pub max_tokens: usize,
    /// About this much of the previous chunk's tail starts each following chunk of a section.
    pub overlap_tokens: usize,
    /// Chunks with less new content than this are merged or grown where possible.
    pub min_tokens: usize,
}

impl Default for ChunkConfig {
    fn default() -> Self {
        // 512 is the input limit of the BERT-family embedding models KnowHub targets; 400 leaves
        // room for the overlap and for the heuristic counter's error.
        ChunkConfig {
            target_tokens: 400,
            max_tokens: 512,
            overlap_tokens: 64,
            min_tokens: 40,
        }
    }
}

/// Why a [`ChunkConfig`] is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkConfigError {
    #[error("max_tokens must be at least 1")]
    ZeroMax,
    #[error("target_tokens must be between 1 and max_tokens ({max}), got {target}")]
    TargetOutOfRange { target: usize, max: usize },
    #[error("min_tokens ({min}) must not exceed target_tokens ({target})")]
    MinAboveTarget { min: usize, target: usize },
    #[error("overlap_tokens ({overlap}) must be at most half of target_tokens ({target})")]
    OverlapTooLarge { overlap: usize, target: usize },
}

impl ChunkConfig {
    /// Checks that the sizes are consistent: `1 ≤ target ≤ max`, `min ≤ target`, and
    /// `2 · overlap ≤ target` (so every chunk carries at least as much new text as overlap).
    pub fn validate(&self) -> Result<(), ChunkConfigError> {
        if self.max_tokens == 0 {
            return Err(ChunkConfigError::ZeroMax);
        }
        if self.target_tokens == 0 || self.target_tokens > self.max_tokens {
            return Err(ChunkConfigError::TargetOutOfRange {
                target: self.target_tokens,
                max: self.max_tokens,
            });
        }
        if self.min_tokens > self.target_tokens {
            return Err(ChunkConfigError::MinAboveTarget {
                min: self.min_tokens,
                target: self.target_tokens,
            });
        }
        if self.overlap_tokens.saturating_mul(2) > self.target_tokens {
            return Err(ChunkConfigError::OverlapTooLarge {
                overlap: self.overlap_tokens,
                target: self.target_tokens,
            });
        }
        Ok(())
    }

    /// The nearest valid configuration: what [`chunk_document`](crate::chunk_document) uses,
    /// so that a bad setting degrades chunk quality instead of failing ingestion.
    /// `max_tokens` wins over the others; a valid configuration is returned unchanged.
    pub fn sanitized(&self) -> ChunkConfig {
        let max_tokens = self.max_tokens.max(1);
        let target_tokens = self.target_tokens.clamp(1, max_tokens);
        ChunkConfig {
            target_tokens,
            max_tokens,
            overlap_tokens: self.overlap_tokens.min(target_tokens / 2),
            min_tokens: self.min_tokens.min(target_tokens),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let ok = ChunkConfig::default();
        assert_eq!(ok.validate(), Ok(()));
        assert_eq!(ok.sanitized(), ok);
        let cases = [
            (
                ChunkConfig {
                    max_tokens: 0,
                    ..ok
                },
                ChunkConfigError::ZeroMax,
            ),
            (
                ChunkConfig {
                    target_tokens: 0,
                    ..ok
                },
                ChunkConfigError::TargetOutOfRange {
                    target: 0,
                    max: 512,
                },
            ),
            (
                ChunkConfig {
                    target_tokens: 600,
                    ..ok
                },
                ChunkConfigError::TargetOutOfRange {
                    target: 600,
                    max: 512,
                },
            ),
            (
                ChunkConfig {
                    min_tokens: 401,
                    ..ok
                },
                ChunkConfigError::MinAboveTarget {
                    min: 401,
                    target: 400,
                },
            ),
            (
                ChunkConfig {
                    overlap_tokens: 201,
                    ..ok
                },
                ChunkConfigError::OverlapTooLarge {
                    overlap: 201,
                    target: 400,
                },
            ),
        ];
        for (cfg, want) in cases {
            assert_eq!(cfg.validate(), Err(want.clone()), "{cfg:?}");
            assert_eq!(cfg.sanitized().validate(), Ok(()), "{cfg:?}");
        }
    }
}
