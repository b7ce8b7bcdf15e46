//! API keys: generation, stored hash form and constant-time verification.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::AuthzError;

/// Prefix of every KnowHub API key, so leaked keys are recognisable (secret scanners).
pub const API_KEY_PREFIX: &str = "kh_";

/// Bytes of randomness in a key's secret (256 bits).
pub const API_KEY_SECRET_BYTES: usize = 32;

/// A freshly generated API key: `kh_` followed by 64 lower-case hex digits (256 random bits).
///
/// The secret is shown to its owner once and never stored: persist [`ApiKey::hash`] instead.
/// `Debug` redacts the secret.
pub struct ApiKey {
    secret: String,
}

impl ApiKey {
    /// Generates a key from the operating system's random source.
    pub fn generate() -> Result<Self, AuthzError> {
        let mut bytes = [0u8; API_KEY_SECRET_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| AuthzError::Random(e.to_string()))?;
        let mut secret = String::with_capacity(API_KEY_PREFIX.len() + 2 * bytes.len());
        secret.push_str(API_KEY_PREFIX);
        push_hex(&mut secret, &bytes);
        Ok(Self { secret })
    }

    /// The full secret, to show to the owner once.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// The form to store.
    pub fn hash(&self) -> KeyHash {
        KeyHash::of(&self.secret)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The stored form of an API key: SHA-256 of the full secret string. Displays and serialises as
/// 64 lower-case hex digits.
///
/// A plain (unsalted) hash is appropriate here because the secret has 256 bits of entropy:
/// there is nothing to brute-force, unlike a password.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct KeyHash([u8; 32]);

impl KeyHash {
    /// Hashes a presented secret (of any length or shape).
    pub fn of(secret: &str) -> Self {
        Self(Sha256::digest(secret.as_bytes()).into())
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// Whether `presented` is the key whose stored hash is `stored`.
///
/// The presented key is hashed first and the two fixed-size digests compared with
/// [`subtle::ConstantTimeEq`], so timing reveals neither the stored hash nor how much of a
/// guess matched; presented keys of any length are accepted (and simply fail to match).
pub fn verify(presented: &str, stored: &KeyHash) -> bool {
    KeyHash::of(presented).0.ct_eq(&stored.0).into()
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

impl fmt::Display for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(64);
        push_hex(&mut s, &self.0);
        f.write_str(&s)
    }
}

impl fmt::Debug for KeyHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyHash({self})")
    }
}

impl FromStr for KeyHash {
    type Err = AuthzError;
    fn from_str(s: &str) -> Result<Self, AuthzError> {
        let bytes = s.as_bytes();
        if bytes.len() != 64 {
            return Err(AuthzError::InvalidKeyHash("expected 64 hex digits"));
        }
        let mut out = [0u8; 32];
        for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            let (Some(hi), Some(lo)) = (hex_value(pair[0]), hex_value(pair[1])) else {
                return Err(AuthzError::InvalidKeyHash("non-hex character"));
            };
            *slot = hi << 4 | lo;
        }
        Ok(Self(out))
    }
}

impl TryFrom<String> for KeyHash {
    type Error = AuthzError;
    fn try_from(s: String) -> Result<Self, AuthzError> {
        s.parse()
    }
}

impl From<KeyHash> for String {
    fn from(h: KeyHash) -> String {
        h.to_string()
    }
}
