//! The HTTP API served by the desktop app (Settings → API, off by default): the same
//! `knowhub-server` as `knowhub serve`, over the app's own [`Hub`] (same engines, same
//! permission checks: every request signs in with its own API key), on loopback only.
//!
//! It runs on Tauri's async runtime; a `oneshot` channel is its shutdown signal. Dropping the
//! [`RunningApi`] (or calling [`RunningApi::stop`]) stops it.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use knowhub_engine::Hub;
use knowhub_llm::Llm;
use tokio::sync::oneshot;

/// How long [`RunningApi::stop`] waits for requests in flight to finish.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The API server while it runs.
pub(crate) struct RunningApi {
    addr: SocketAddr,
    shutdown: Option<oneshot::Sender<()>>,
    task: tauri::async_runtime::JoinHandle<()>,
    /// Why the server stopped by itself, if it did.
    failure: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for RunningApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningApi")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Starts the API on `127.0.0.1:<port>` (port 0: any free port, for tests). Loopback only:
/// the address is never taken from elsewhere.
///
/// `llm` writes the API's answers: the desktop passes its answer model when it is already
/// loaded, else `None` (extractive answers, as `knowhub serve` without a model).
///
/// A port that cannot be taken (in use, not permitted) comes back as a sentence for the
/// settings pane.
pub(crate) async fn start(
    hub: Arc<Hub>,
    llm: Option<Arc<dyn Llm>>,
    port: u16,
) -> Result<RunningApi, String> {
    let wanted = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let listener = tokio::net::TcpListener::bind(wanted)
        .await
        .map_err(|e| bind_error(wanted, &e))?;
    let addr = listener.local_addr().map_err(|e| bind_error(wanted, &e))?;
    let state = knowhub_server::ServerState::new(hub, llm);
    let (tx, rx) = oneshot::channel::<()>();
    let failure = Arc::new(Mutex::new(None));
    let failed = Arc::clone(&failure);
    let task = tauri::async_runtime::spawn(async move {
        // A dropped sender stops the server too (`rx` then resolves with an error).
        let shutdown = async move {
            let _ = rx.await;
        };
        if let Err(e) = knowhub_server::serve_on(listener, state, shutdown).await {
            tracing::warn!("the KnowHub API on {addr} stopped: {e}");
            *failed.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(format!("The API on {addr} stopped: {e}."));
        }
    });
    tracing::info!("KnowHub API on http://{addr}");
    Ok(RunningApi {
        addr,
        shutdown: Some(tx),
        task,
        failure,
    })
}

impl RunningApi {
    /// Where it listens (the real port when started on port 0).
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `None` while it serves; why it stopped when it stopped by itself.
    pub(crate) fn failure(&self) -> Option<String> {
        if !self.task.inner().is_finished() {
            return None;
        }
        Some(
            self.failure
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .unwrap_or_else(|| format!("The API on {} stopped.", self.addr)),
        )
    }

    /// Stops accepting connections and waits (a few seconds at most) for requests in flight.
    /// The port is free when this returns.
    pub(crate) async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(STOP_GRACE, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

/// A bind failure as the settings pane shows it.
fn bind_error(addr: SocketAddr, e: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::AddrInUse => format!(
            "Cannot listen on {addr}: another program already uses port {}. Choose another port.",
            addr.port()
        ),
        K::PermissionDenied => format!(
            "Cannot listen on {addr}: this system does not allow it (permission denied). \
             Choose another port."
        ),
        _ => format!("Cannot listen on {addr}: {e}."),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{Read, Write};

    use knowhub_engine::{EngineConfig, ModelConfig, Role, UserId, dev_context};

    use super::*;

    fn hub(dir: &std::path::Path) -> Arc<Hub> {
        let mut config = EngineConfig::new(dir);
        config.models = ModelConfig::keyword_only();
        Arc::new(Hub::open(config).unwrap())
    }

    fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
        get_as(addr, path, None)
    }

    fn get_as(addr: SocketAddr, path: &str, key: Option<&str>) -> std::io::Result<String> {
        let mut stream = std::net::TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let auth = key.map_or(String::new(), |k| format!("X-API-Key: {k}\r\n"));
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
        )?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply)?;
        Ok(reply)
    }

    #[test]
    fn serves_the_api_on_loopback_then_stops() {
        let dir = tempfile::tempdir().unwrap();
        let hub = hub(dir.path());
        let api = tauri::async_runtime::block_on(start(Arc::clone(&hub), None, 0)).unwrap();
        let addr = api.addr();
        assert!(addr.ip().is_loopback());
        assert_ne!(addr.port(), 0);
        assert_eq!(api.failure(), None);

        let health = get(addr, "/api/v1/health").unwrap();
        assert!(health.starts_with("HTTP/1.1 200"), "{health}");
        assert!(health.contains(r#""status":"ok""#), "{health}");
        // The same permission checks as `knowhub serve`: no key, no data.
        let users = get(addr, "/api/v1/admin/accounts").unwrap();
        assert!(users.starts_with("HTTP/1.1 401"), "{users}");
        // One hub: a key the app makes after the start signs in to the API, with that user's
        // rights only.
        let dev = dev_context();
        let engine = hub.engine(&dev).unwrap();
        let alice = UserId::new("alice").unwrap();
        engine.add_user(&dev, &alice, "Alice", Role::User).unwrap();
        let key = engine.rotate_api_key(&dev, &alice).unwrap();
        let as_alice = get_as(addr, "/api/v1/admin/accounts", Some(key.secret())).unwrap();
        assert!(as_alice.starts_with("HTTP/1.1 403"), "{as_alice}");

        tauri::async_runtime::block_on(api.stop());
        let refused = std::net::TcpStream::connect(addr);
        assert!(refused.is_err(), "the port is still open after stop");
    }

    #[test]
    fn a_port_in_use_is_a_sentence_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let taken = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let err = tauri::async_runtime::block_on(start(hub(dir.path()), None, port)).unwrap_err();
        assert!(err.contains("already uses port"), "{err}");
        assert!(err.contains(&port.to_string()), "{err}");
    }
}
