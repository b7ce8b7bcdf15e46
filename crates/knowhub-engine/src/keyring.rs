//! The OS keyring as the home of the key that seals resource secrets (seed 002: "key in the
//! OS keyring where available, else a key file readable only by the user").
//!
//! Where the key of a data directory lives is decided once and then never silently changes,
//! because a key that moves would make every sealed secret unreadable:
//!
//! * `secret.key.keyring` exists (a marker, no secret in it) → the key is in the OS keyring,
//!   entry `knowhub` / `resource-key:<hash of the data directory>`. If the keyring cannot be
//!   reached, that is an error — never a fresh file key.
//! * `secret.key` exists → the key is that file (0600), as before this module existed.
//! * Neither (a new data directory) → with [`KeyringKeySource::prefer_keyring`] (the desktop
//!   app, where a user session has a keyring) the key is generated, stored in the keyring,
//!   read back and compared, and only then the marker is written; if the keyring is missing,
//!   refuses, or does not answer within a few seconds (a locked keyring whose unlock prompt
//!   nobody sees), the key file is created instead. Without it (CLI, server, tests) the file.
//!
//! The keyring itself sits behind [`SecretVault`] so this decision is tested without one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, mpsc};
use std::time::Duration;

use crate::secrets::{FileKeySource, KeySource, SecretError, SecretKey};

/// The keyring service name of KnowHub's entries.
const SERVICE: &str = "knowhub";
/// How long a keyring may take to answer before a new data directory uses the file.
const KEYRING_TIMEOUT: Duration = Duration::from_secs(5);
/// Key length (XChaCha20-Poly1305).
const KEY_LEN: usize = 32;

/// A place that holds one secret (the OS keyring in the app; a fake in tests).
pub trait SecretVault: Send + Sync + std::fmt::Debug {
    /// The secret, `None` when there is none yet.
    fn read(&self) -> Result<Option<Vec<u8>>, String>;
    fn write(&self, secret: &[u8]) -> Result<(), String>;
    /// Deletes the secret (nothing there is fine).
    fn remove(&self) -> Result<(), String> {
        self.write(&[])
    }
    /// Where it is, for messages (`OS keyring entry knowhub/resource-key:…`).
    fn describe(&self) -> String;
}

/// The OS credential store: Secret Service (GNOME Keyring, KWallet) on Linux, the Keychain
/// on macOS, the Credential Manager on Windows.
#[derive(Debug, Clone)]
pub struct OsKeyring {
    user: String,
}

impl OsKeyring {
    /// The entry for the data directory `data_dir`.
    pub fn for_data_dir(data_dir: &Path) -> OsKeyring {
        OsKeyring::of_data_dir(data_dir, "resource-key")
    }

    /// The data directory's entry for `what` (`<what>:<hash of the directory>`), e.g. the
    /// desktop's `team-key`.
    pub fn of_data_dir(data_dir: &Path, what: &str) -> OsKeyring {
        let canonical = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_owned());
        let hash = blake3::hash(canonical.to_string_lossy().as_bytes());
        OsKeyring {
            user: format!("{what}:{}", &hash.to_hex()[..16]),
        }
    }

    fn entry(&self) -> Result<keyring::Entry, String> {
        keyring::Entry::new(SERVICE, &self.user).map_err(|e| e.to_string())
    }
}

impl SecretVault for OsKeyring {
    fn read(&self) -> Result<Option<Vec<u8>>, String> {
        match self.entry()?.get_secret() {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    fn write(&self, secret: &[u8]) -> Result<(), String> {
        self.entry()?.set_secret(secret).map_err(|e| e.to_string())
    }

    fn remove(&self) -> Result<(), String> {
        match self.entry()?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    fn describe(&self) -> String {
        format!("OS keyring entry {SERVICE}/{}", self.user)
    }
}

/// Runs `call` on `vault` on a helper thread, giving up after `timeout` (a keyring that waits
/// for an unlock prompt nobody sees must not hang the caller; the thread is left to finish).
pub fn bounded<T: Send + 'static>(
    vault: Arc<dyn SecretVault>,
    timeout: Duration,
    call: impl FnOnce(&dyn SecretVault) -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(call(vault.as_ref()));
    });
    rx.recv_timeout(timeout)
        .unwrap_or_else(|_| Err("the keyring did not answer".into()))
}

/// The key source of a data directory (see the module docs).
#[derive(Debug)]
pub struct KeyringKeySource {
    vault: Arc<dyn SecretVault>,
    file: FileKeySource,
    marker: PathBuf,
    prefer_keyring: bool,
    timeout: Duration,
    key: OnceLock<SecretKey>,
}

impl KeyringKeySource {
    /// The data directory's key: where it already is, and a new one in the key file.
    pub fn new(data_dir: &Path) -> KeyringKeySource {
        Self::with_vault(data_dir, Arc::new(OsKeyring::for_data_dir(data_dir)))
    }

    /// The same over another vault (tests).
    pub fn with_vault(data_dir: &Path, vault: Arc<dyn SecretVault>) -> KeyringKeySource {
        KeyringKeySource {
            vault,
            file: FileKeySource::new(data_dir.join("secret.key")),
            marker: data_dir.join("secret.key.keyring"),
            prefer_keyring: false,
            timeout: KEYRING_TIMEOUT,
            key: OnceLock::new(),
        }
    }

    /// A new data directory keeps its key in the keyring when one answers.
    pub fn prefer_keyring(mut self) -> Self {
        self.prefer_keyring = true;
        self
    }

    #[cfg(test)]
    fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Where the key is (for settings and diagnostics): `keyring`, `file` or `none yet`.
    pub fn location(&self) -> &'static str {
        if self.marker.exists() {
            "keyring"
        } else if self.file.path().exists() {
            "file"
        } else {
            "none yet"
        }
    }

    /// Runs a vault call on a helper thread, giving up after the timeout (a keyring that
    /// waits for an unlock prompt must not hang the app; the thread is left to finish).
    fn bounded<T: Send + 'static>(
        &self,
        call: impl FnOnce(&dyn SecretVault) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        bounded(Arc::clone(&self.vault), self.timeout, call)
    }

    fn keyring_error(&self, message: String) -> SecretError {
        SecretError::Keyring(format!("{}: {message}", self.vault.describe()))
    }

    fn key_in_keyring(&self) -> Result<SecretKey, SecretError> {
        match self.bounded(|v| v.read()) {
            Ok(Some(bytes)) => to_key(&bytes).ok_or_else(|| {
                self.keyring_error("it does not hold a KnowHub key (wrong length)".into())
            }),
            Ok(None) => Err(self.keyring_error(
                "the key is missing (the keyring was reset?): secrets sealed with it cannot be \
                 opened"
                    .into(),
            )),
            Err(e) => Err(self.keyring_error(format!(
                "the key of this knowledge base is kept there and the keyring is not \
                 available ({e})"
            ))),
        }
    }

    /// A new key in the keyring, checked by reading it back; `None` when the keyring cannot
    /// take it (the caller falls back to the file).
    fn new_in_keyring(&self) -> Result<Option<SecretKey>, SecretError> {
        let mut bytes = zeroize::Zeroizing::new([0u8; KEY_LEN]);
        getrandom::fill(bytes.as_mut()).map_err(|e| SecretError::Random(e.to_string()))?;
        let fresh = zeroize::Zeroizing::new(bytes.to_vec());
        let stored = self.bounded(move |v| {
            if v.read()?.is_some() {
                // Not ours to overwrite: another data directory with the same hash, or a
                // leftover — use the file rather than destroy it.
                return Err("an entry already exists".into());
            }
            v.write(&fresh)?;
            v.read().map(|back| back.map(zeroize::Zeroizing::new))
        });
        match stored {
            Ok(Some(back)) if back.as_slice() == bytes.as_slice() => {
                std::fs::write(
                    &self.marker,
                    format!(
                        "The key sealing this knowledge base's secrets is in the {}.\n",
                        self.vault.describe()
                    ),
                )
                .map_err(|source| SecretError::Io {
                    path: self.marker.display().to_string(),
                    source,
                })?;
                Ok(to_key(&back))
            }
            Ok(_) => {
                tracing::warn!("the keyring did not keep the key; using the key file");
                Ok(None)
            }
            Err(e) => {
                tracing::info!("no OS keyring ({e}); the key goes to the key file");
                Ok(None)
            }
        }
    }
}

fn to_key(bytes: &[u8]) -> Option<SecretKey> {
    <[u8; KEY_LEN]>::try_from(bytes)
        .ok()
        .map(SecretKey::from_bytes)
}

impl KeySource for KeyringKeySource {
    fn key(&self) -> Result<SecretKey, SecretError> {
        if let Some(key) = self.key.get() {
            return Ok(key.clone());
        }
        let key = if self.marker.exists() {
            self.key_in_keyring()?
        } else if self.file.path().exists() || !self.prefer_keyring {
            self.file.key()?
        } else {
            match self.new_in_keyring()? {
                Some(key) => key,
                None => self.file.key()?,
            }
        };
        Ok(self.key.get_or_init(|| key).clone())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A vault in memory that can be made to fail, hang, or lose what it was given.
    #[derive(Debug, Default)]
    struct FakeVault {
        secret: Mutex<Option<Vec<u8>>>,
        broken: bool,
        forgetful: bool,
        hangs: bool,
    }

    impl SecretVault for FakeVault {
        fn read(&self) -> Result<Option<Vec<u8>>, String> {
            if self.hangs {
                std::thread::sleep(Duration::from_secs(3));
            }
            if self.broken {
                return Err("no secret service".into());
            }
            Ok(self.secret.lock().unwrap().clone())
        }
        fn write(&self, secret: &[u8]) -> Result<(), String> {
            if !self.forgetful {
                *self.secret.lock().unwrap() = Some(secret.to_vec());
            }
            Ok(())
        }
        fn describe(&self) -> String {
            "fake vault".into()
        }
    }

    fn source(dir: &Path, vault: &Arc<FakeVault>) -> KeyringKeySource {
        KeyringKeySource::with_vault(dir, Arc::clone(vault) as Arc<dyn SecretVault>)
            .prefer_keyring()
            .timeout(Duration::from_millis(300))
    }

    /// Against the real OS keyring. On Linux, with GNOME Keyring installed:
    /// `dbus-run-session -- sh -c 'echo pw | gnome-keyring-daemon --unlock --components=secrets
    /// && cargo test -p knowhub-engine --lib keyring -- --ignored'`
    #[test]
    #[ignore = "needs a running Secret Service / Keychain / Credential Manager"]
    fn the_os_keyring_keeps_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let app = KeyringKeySource::new(dir.path()).prefer_keyring();
        let key = app.key().unwrap();
        assert_eq!(app.location(), "keyring", "no OS keyring answered");
        assert!(!dir.path().join("secret.key").exists());
        let cli = KeyringKeySource::new(dir.path());
        assert_eq!(cli.key().unwrap().id(), key.id());
        let vault = OsKeyring::for_data_dir(dir.path());
        assert_eq!(vault.read().unwrap().map(|b| b.len()), Some(KEY_LEN));
        vault.entry().unwrap().delete_credential().unwrap();
    }

    #[test]
    fn a_new_key_goes_to_the_keyring_and_stays_there() {
        let dir = tempfile::tempdir().unwrap();
        let vault = Arc::new(FakeVault::default());
        let first = source(dir.path(), &vault).key().unwrap();
        assert_eq!(source(dir.path(), &vault).location(), "keyring");
        assert!(!dir.path().join("secret.key").exists());
        // Another process (a CLI that does not prefer the keyring) finds the same key.
        let cli = KeyringKeySource::with_vault(dir.path(), vault.clone());
        assert_eq!(cli.key().unwrap().id(), first.id());
        // The keyring gone later: an error, never a new key that would orphan the secrets.
        let gone = Arc::new(FakeVault {
            broken: true,
            ..FakeVault::default()
        });
        let err = source(dir.path(), &gone).key().unwrap_err();
        assert!(err.to_string().contains("not available"), "{err}");
        assert!(!dir.path().join("secret.key").exists());
        // Reset (entry deleted): also an error.
        let reset = Arc::new(FakeVault::default());
        let err = source(dir.path(), &reset).key().unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
    }

    #[test]
    fn without_a_working_keyring_the_key_file_is_used() {
        for vault in [
            FakeVault {
                broken: true,
                ..FakeVault::default()
            },
            FakeVault {
                forgetful: true,
                ..FakeVault::default()
            },
            FakeVault {
                hangs: true,
                ..FakeVault::default()
            },
        ] {
            let dir = tempfile::tempdir().unwrap();
            let vault = Arc::new(vault);
            let key = source(dir.path(), &vault).key().unwrap();
            assert_eq!(source(dir.path(), &vault).location(), "file", "{vault:?}");
            let again = KeyringKeySource::with_vault(dir.path(), vault.clone()).key();
            assert_eq!(again.unwrap().id(), key.id());
        }
    }

    #[test]
    fn an_existing_key_file_stays_the_key_and_foreign_entries_are_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let file_key = FileKeySource::new(dir.path().join("secret.key"))
            .key()
            .unwrap();
        let vault = Arc::new(FakeVault::default());
        assert_eq!(
            source(dir.path(), &vault).key().unwrap().id(),
            file_key.id()
        );
        assert!(vault.secret.lock().unwrap().is_none(), "nothing moved");

        let dir = tempfile::tempdir().unwrap();
        let taken = Arc::new(FakeVault {
            secret: Mutex::new(Some(b"someone else's".to_vec())),
            ..FakeVault::default()
        });
        source(dir.path(), &taken).key().unwrap();
        assert_eq!(
            taken.secret.lock().unwrap().as_deref(),
            Some(&b"someone else's"[..])
        );
        assert_eq!(source(dir.path(), &taken).location(), "file");
    }
}
