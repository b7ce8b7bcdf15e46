//! Encryption at rest for resources' secure bodies.
//!
//! * **Cipher**: XChaCha20-Poly1305 (RustCrypto `chacha20poly1305`), a fresh random 24-byte
//!   nonce per write, and the resource id as associated data: a ciphertext copied to another
//!   row (or a tampered one) fails authentication instead of decrypting.
//! * **Key**: 32 random bytes from a [`KeySource`]. [`FileKeySource`] keeps it in
//!   `<data dir>/secret.key`, created atomically with mode 0600 (temporary file + hard link,
//!   so two processes starting together agree on one key) and refused when group or others
//!   can read it. [`crate::keyring::KeyringKeySource`] keeps a new data directory's key in
//!   the OS keyring instead (the desktop app) and is the engine's default source: it finds
//!   the key wherever it already is. [`MemoryKeySource`] is for tests.
//! * **Key id**: the first 8 bytes of the key's BLAKE3 hash, stored next to each ciphertext,
//!   so a changed key gives a clear error rather than an authentication failure.
//! * Keys and decrypted secrets are wiped from memory on drop (`zeroize`), and [`SecureBody`]
//!   prints as `[redacted]` in `Debug`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};
use knowhub_store::{SealedSecret, StoreError};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::EngineError;

/// Key length in bytes.
pub(crate) const KEY_LEN: usize = 32;
const NONCE_LEN: usize = 24;

/// Errors of key handling and sealing.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("secret key file {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "secret key file {path} is readable by group or others (mode {mode:o}); \
         run `chmod 600 {path}` and retry"
    )]
    KeyFileTooOpen { path: String, mode: u32 },
    #[error("secret key file {path} is damaged: expected {KEY_LEN} bytes, found {len}")]
    KeyFileLength { path: String, len: u64 },
    #[error("no randomness for a key or nonce: {0}")]
    Random(String),
    /// The OS keyring holding the key could not give it.
    #[error("{0}")]
    Keyring(String),
    #[error(
        "the secure body of resource {id} was encrypted with key {stored}, but the current key \
         is {current}"
    )]
    WrongKey {
        id: String,
        stored: String,
        current: String,
    },
    #[error(
        "the secure body of resource {id} cannot be decrypted: the ciphertext was altered or \
         belongs to another resource"
    )]
    Tampered { id: String },
    #[error("encryption failed for resource {id}")]
    Encrypt { id: String },
    /// Team mode without a shared key: each replica would seal with a key of its own.
    #[error(
        "this team server has no sealing key for secure bodies: set KNOWHUB_SECRET_KEY_FILE \
         (--secret-key-file) on every replica to the same key file"
    )]
    NoTeamKey,
}

impl From<SecretError> for EngineError {
    fn from(e: SecretError) -> EngineError {
        match e {
            SecretError::Io { path, source } => EngineError::Io { path, source },
            SecretError::NoTeamKey => EngineError::InvalidInput(e.to_string()),
            other => EngineError::Store(StoreError::Corrupt(other.to_string())),
        }
    }
}

/// A 32-byte key, wiped on drop.
#[derive(Clone)]
pub struct SecretKey(Zeroizing<[u8; KEY_LEN]>);

impl SecretKey {
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> SecretKey {
        SecretKey(Zeroizing::new(bytes))
    }

    /// A fresh random key.
    pub fn generate() -> Result<SecretKey, SecretError> {
        let mut bytes = Zeroizing::new([0u8; KEY_LEN]);
        getrandom::fill(bytes.as_mut()).map_err(|e| SecretError::Random(e.to_string()))?;
        Ok(SecretKey(bytes))
    }

    /// A short, non-secret identifier of this key.
    pub fn id(&self) -> String {
        let hash = blake3::hash(self.0.as_ref());
        let hex: String = hash.as_bytes()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("k-{hex}")
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretKey({}, [redacted])", self.id())
    }
}

/// Where the encryption key comes from.
pub trait KeySource: Send + Sync + std::fmt::Debug {
    /// The key, created on first use.
    fn key(&self) -> Result<SecretKey, SecretError>;
}

/// A team replica configured without a shared key file: sealing and opening refuse.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NoTeamKey;

impl KeySource for NoTeamKey {
    fn key(&self) -> Result<SecretKey, SecretError> {
        Err(SecretError::NoTeamKey)
    }
}

/// A fixed key held in memory (tests, or a key handed over by a front end).
#[derive(Debug, Clone)]
pub struct MemoryKeySource(SecretKey);

impl MemoryKeySource {
    pub fn new(key: SecretKey) -> MemoryKeySource {
        MemoryKeySource(key)
    }
}

impl KeySource for MemoryKeySource {
    fn key(&self) -> Result<SecretKey, SecretError> {
        Ok(self.0.clone())
    }
}

/// The key in a file readable by its user only (created with mode 0600 when missing).
#[derive(Debug, Clone)]
pub struct FileKeySource {
    path: PathBuf,
}

impl FileKeySource {
    pub fn new(path: impl Into<PathBuf>) -> FileKeySource {
        FileKeySource { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn io(&self, source: std::io::Error) -> SecretError {
        SecretError::Io {
            path: self.path.display().to_string(),
            source,
        }
    }

    fn read(&self) -> Result<Option<SecretKey>, SecretError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(e)),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(SecretError::KeyFileTooOpen {
                    path: self.path.display().to_string(),
                    mode,
                });
            }
        }
        if meta.len() != KEY_LEN as u64 {
            return Err(SecretError::KeyFileLength {
                path: self.path.display().to_string(),
                len: meta.len(),
            });
        }
        let bytes = Zeroizing::new(std::fs::read(&self.path).map_err(|e| self.io(e))?);
        let mut key = [0u8; KEY_LEN];
        if bytes.len() != KEY_LEN {
            return Err(SecretError::KeyFileLength {
                path: self.path.display().to_string(),
                len: bytes.len() as u64,
            });
        }
        key.copy_from_slice(&bytes);
        let key = SecretKey::from_bytes(key);
        Ok(Some(key))
    }

    /// Writes a new key to a private temporary file, then links it into place (fails if
    /// another process got there first: that key wins).
    fn create(&self) -> Result<(), SecretError> {
        let key = SecretKey::generate()?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(|e| SecretError::Random(e.to_string()))?;
        let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = self.path.with_extension(format!("key.tmp-{suffix}"));
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let written = options.open(&tmp).and_then(|mut f| {
            f.write_all(key.0.as_ref())?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(self.io(e));
        }
        let linked = std::fs::hard_link(&tmp, &self.path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(self.io(e)),
        }
    }
}

impl KeySource for FileKeySource {
    fn key(&self) -> Result<SecretKey, SecretError> {
        if let Some(key) = self.read()? {
            return Ok(key);
        }
        self.create()?;
        self.read()?.ok_or_else(|| {
            self.io(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "key file vanished after creation",
            ))
        })
    }
}

/// A secret in plaintext: wiped on drop, `[redacted]` in `Debug`, serialized as a plain
/// string (only ever into responses to the owner or an administrator).
#[derive(Clone, PartialEq, Eq)]
pub struct SecureBody(Zeroizing<String>);

impl Serialize for SecureBody {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.expose())
    }
}

impl<'de> Deserialize<'de> for SecureBody {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(SecureBody(Zeroizing::new(String::deserialize(
            deserializer,
        )?)))
    }
}

impl SecureBody {
    pub fn new(text: impl Into<String>) -> SecureBody {
        SecureBody(Zeroizing::new(text.into()))
    }

    /// The plaintext. Never log it.
    pub fn expose(&self) -> &str {
        self.0.as_str()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for SecureBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Encrypts `secret` for resource `id` under `key`.
pub(crate) fn seal(
    key: &SecretKey,
    id: &str,
    secret: &SecureBody,
) -> Result<SealedSecret, SecretError> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|e| SecretError::Random(e.to_string()))?;
    let cipher = XChaCha20Poly1305::new(Key::from_slice(key.0.as_ref()));
    let ciphertext = cipher
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: secret.expose().as_bytes(),
                aad: id.as_bytes(),
            },
        )
        .map_err(|_| SecretError::Encrypt { id: id.to_owned() })?;
    Ok(SealedSecret {
        key_id: key.id(),
        nonce: nonce.to_vec(),
        ciphertext,
    })
}

/// Decrypts the secret of resource `id`; fails (never panics) on a wrong key, a tampered
/// ciphertext or one sealed for another id.
pub(crate) fn open(
    key: &SecretKey,
    id: &str,
    sealed: &SealedSecret,
) -> Result<SecureBody, SecretError> {
    let current = key.id();
    if sealed.key_id != current {
        return Err(SecretError::WrongKey {
            id: id.to_owned(),
            stored: sealed.key_id.clone(),
            current,
        });
    }
    if sealed.nonce.len() != NONCE_LEN {
        return Err(SecretError::Tampered { id: id.to_owned() });
    }
    let cipher = XChaCha20Poly1305::new(Key::from_slice(key.0.as_ref()));
    let plain = Zeroizing::new(
        cipher
            .decrypt(
                XNonce::from_slice(&sealed.nonce),
                Payload {
                    msg: &sealed.ciphertext,
                    aad: id.as_bytes(),
                },
            )
            .map_err(|_| SecretError::Tampered { id: id.to_owned() })?,
    );
    let text =
        std::str::from_utf8(&plain).map_err(|_| SecretError::Tampered { id: id.to_owned() })?;
    Ok(SecureBody::new(text))
}

/// The engine's key source: the data directory's key wherever it is (keyring or file; see
/// `keyring.rs`) unless one was installed. Created on first use and kept (so the keyring is
/// asked once per process).
#[derive(Debug, Default)]
pub(crate) struct KeySlot {
    source: std::sync::RwLock<Option<Arc<dyn KeySource>>>,
    keyring_for_new_keys: bool,
}

impl KeySlot {
    pub(crate) fn new(keyring_for_new_keys: bool) -> KeySlot {
        KeySlot {
            source: Default::default(),
            keyring_for_new_keys,
        }
    }

    pub(crate) fn set(&self, source: Arc<dyn KeySource>) {
        *self.source.write().unwrap_or_else(|p| p.into_inner()) = Some(source);
    }

    pub(crate) fn get(&self, data_dir: &Path) -> Arc<dyn KeySource> {
        if let Some(s) = self
            .source
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            return Arc::clone(s);
        }
        let mut slot = self.source.write().unwrap_or_else(|p| p.into_inner());
        let source = slot.get_or_insert_with(|| {
            let mut s = crate::keyring::KeyringKeySource::new(data_dir);
            if self.keyring_for_new_keys {
                s = s.prefer_keyring();
            }
            Arc::new(s)
        });
        Arc::clone(source)
    }
}
