//! Turning generated tokens into the text pieces `on_token` receives.
//!
//! Two problems sit between a token stream and a user's screen:
//! - A byte-level BPE token is a run of *bytes*, not characters: a Chinese character (3 bytes in
//!   UTF-8) is often split over two tokens. [`Utf8Decoder`] holds an incomplete character back
//!   until its last byte arrives, so no piece ever ends in half a character.
//! - A stop string ("\nQuestion:") may arrive over several tokens and must not reach the user.
//!   [`StopFilter`] holds back any tail of the text that could still become a stop string, and
//!   cuts the text where one completes.
//!
//! Both providers use them, so the local model and a server behave the same way.

/// Incremental UTF-8 decoding of a byte stream.
#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// Adds bytes; returns the text of every character completed so far. Bytes that can never
    /// be UTF-8 become U+FFFD; an incomplete character at the end waits for the next call.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(s) => {
                    out.push_str(s);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[..valid]));
                    match e.error_len() {
                        // The tail is the start of a character: keep it for later.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Whether an incomplete character is waiting. At the end of a generation it is dropped
    /// (the model was cut off in the middle of a character).
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }
}

/// Cuts generated text at the first stop string, holding back text that may still become one.
#[derive(Debug)]
pub(crate) struct StopFilter {
    stops: Vec<String>,
    held: String,
}

/// What [`StopFilter::push`] decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Filtered {
    /// Text that is certainly part of the answer.
    pub(crate) emit: String,
    /// A stop string completed: generation must end (its text is not in `emit`).
    pub(crate) stopped: bool,
}

impl StopFilter {
    /// A filter for these stop strings (empty ones are ignored).
    pub(crate) fn new(stops: &[String]) -> Self {
        StopFilter {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            held: String::new(),
        }
    }

    /// Adds generated text.
    pub(crate) fn push(&mut self, piece: &str) -> Filtered {
        if self.stops.is_empty() {
            return Filtered {
                emit: piece.to_owned(),
                stopped: false,
            };
        }
        self.held.push_str(piece);
        let first = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min();
        if let Some(at) = first {
            let mut emit = std::mem::take(&mut self.held);
            emit.truncate(at);
            return Filtered {
                emit,
                stopped: true,
            };
        }
        // Hold back the longest tail that is the beginning of a stop string.
        let len = self.held.len();
        let keep = self
            .held
            .char_indices()
            .map(|(i, _)| i)
            .find(|&i| {
                let tail = &self.held[i..];
                self.stops
                    .iter()
                    .any(|s| s.len() > tail.len() && s.starts_with(tail))
            })
            .map_or(0, |i| len - i);
        let rest = self.held.split_off(len - keep);
        let emit = std::mem::replace(&mut self.held, rest);
        Filtered {
            emit,
            stopped: false,
        }
    }

    /// The held-back text, at the end of a generation that ended for another reason.
    pub(crate) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_characters_wait_for_their_last_byte() {
        let text = "报销a€😀";
        let bytes = text.as_bytes();
        let mut d = Utf8Decoder::default();
        let mut out = String::new();
        let mut pieces = Vec::new();
        for b in bytes {
            let p = d.push(std::slice::from_ref(b));
            if !p.is_empty() {
                pieces.push(p.clone());
            }
            out.push_str(&p);
        }
        assert_eq!(out, text);
        assert_eq!(pieces, ["报", "销", "a", "€", "😀"]);
        assert!(!d.has_pending());
    }

    #[test]
    fn utf8_invalid_bytes_become_replacement() {
        let mut d = Utf8Decoder::default();
        assert_eq!(d.push(b"a\xffb"), "a\u{fffd}b");
        assert_eq!(d.push(b"\xe6\x8a"), "");
        assert!(d.has_pending());
        // A new character start ends the broken one.
        assert_eq!(d.push(b"c"), "\u{fffd}c");
    }

    #[test]
    fn stop_strings_are_cut_and_held_back() {
        let mut f = StopFilter::new(&["\nQ:".to_owned(), "END".to_owned()]);
        let r = f.push("Hello\n");
        assert_eq!(r.emit, "Hello");
        assert!(!r.stopped);
        let r = f.push("World");
        assert_eq!(r.emit, "\nWorld");
        let r = f.push(" E");
        assert_eq!(r.emit, " ");
        let r = f.push("NDING");
        assert_eq!(
            r,
            Filtered {
                emit: String::new(),
                stopped: true
            }
        );
    }

    #[test]
    fn stop_filter_flushes_held_text_at_the_end() {
        let mut f = StopFilter::new(&["答案结束".to_owned()]);
        assert_eq!(f.push("好的答案").emit, "好的");
        assert_eq!(f.finish(), "答案");
        let mut none = StopFilter::new(&[String::new()]);
        assert_eq!(none.push("x").emit, "x");
    }

    #[test]
    fn stop_in_the_middle_of_a_piece() {
        let mut f = StopFilter::new(&["<END>".to_owned()]);
        let r = f.push("abc<END>def");
        assert_eq!(r.emit, "abc");
        assert!(r.stopped);
    }
}
