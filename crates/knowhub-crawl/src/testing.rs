//! A small HTTP/1.1 server on loopback serving a site that tests change between crawls
//! (feature `testing`). It answers conditional requests from each page's ETag and records
//! what it was asked.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One address's answer.
#[derive(Debug, Clone, Default)]
pub struct Route {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Sent as the ETag; a request with a matching `If-None-Match` gets 304.
    pub etag: Option<String>,
    /// Announce this length instead of the body's (and send only the body).
    pub announced_length: Option<u64>,
}

impl Route {
    /// A 200 page of `content_type`; its ETag is derived from the body.
    pub fn page(content_type: &str, body: impl Into<Vec<u8>>) -> Route {
        let body = body.into();
        let etag = format!(
            "\"{:x}\"",
            body.iter()
                .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(*b)))
        );
        Route {
            status: 200,
            headers: vec![("Content-Type".into(), content_type.into())],
            body,
            etag: Some(etag),
            announced_length: None,
        }
    }

    /// An HTML page.
    pub fn html(body: &str) -> Route {
        Route::page("text/html; charset=utf-8", body)
    }

    /// A redirect to `location`.
    pub fn redirect(location: &str) -> Route {
        Route {
            status: 301,
            headers: vec![("Location".into(), location.into())],
            ..Route::default()
        }
    }

    /// A bare status with no body.
    pub fn status(status: u16) -> Route {
        Route {
            status,
            ..Route::default()
        }
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub path: String,
    pub if_none_match: Option<String>,
    pub user_agent: Option<String>,
}

type Routes = Arc<Mutex<HashMap<String, Route>>>;

/// The server; it stops when dropped (its thread is left blocked in `accept` and ends with
/// the process).
#[derive(Debug)]
pub struct TestSite {
    base: String,
    routes: Routes,
    seen: Arc<Mutex<Vec<SeenRequest>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TestSite {
    /// Starts a server on a free loopback port. Unknown paths answer 404.
    pub fn start() -> std::io::Result<TestSite> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let base = format!("http://{}", listener.local_addr()?);
        let routes: Routes = Arc::default();
        let seen: Arc<Mutex<Vec<SeenRequest>>> = Arc::default();
        let (r, s) = (routes.clone(), seen.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, s) = (r.clone(), s.clone());
                std::thread::spawn(move || {
                    let _ = answer(stream, &r, &s);
                });
            }
        });
        Ok(TestSite { base, routes, seen })
    }

    /// `http://127.0.0.1:<port>` followed by `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn set(&self, path: &str, route: Route) {
        lock(&self.routes).insert(path.to_owned(), route);
    }

    pub fn remove(&self, path: &str) {
        lock(&self.routes).remove(path);
    }

    /// Requests so far, in order; `take` empties the log.
    pub fn requests(&self, take: bool) -> Vec<SeenRequest> {
        let mut seen = lock(&self.seen);
        if take {
            std::mem::take(&mut *seen)
        } else {
            seen.clone()
        }
    }
}

fn answer(
    stream: TcpStream,
    routes: &Routes,
    seen: &Mutex<Vec<SeenRequest>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let request = SeenRequest {
        path: path.clone(),
        if_none_match: headers.get("if-none-match").cloned(),
        user_agent: headers.get("user-agent").cloned(),
    };
    lock(seen).push(request.clone());
    let route = lock(routes).get(&path).cloned().unwrap_or_else(|| Route {
        status: 404,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        body: b"not found".to_vec(),
        ..Route::default()
    });
    let mut out = stream;
    if route.etag.is_some() && request.if_none_match == route.etag {
        let etag = route.etag.unwrap_or_default();
        write!(
            out,
            "HTTP/1.1 304 Not Modified\r\nETag: {etag}\r\nConnection: close\r\n\r\n"
        )?;
        return out.flush();
    }
    write!(out, "HTTP/1.1 {} X\r\n", route.status)?;
    for (k, v) in &route.headers {
        write!(out, "{k}: {v}\r\n")?;
    }
    if let Some(etag) = &route.etag {
        write!(out, "ETag: {etag}\r\n")?;
    }
    let length = route.announced_length.unwrap_or(route.body.len() as u64);
    write!(out, "Content-Length: {length}\r\nConnection: close\r\n\r\n")?;
    out.write_all(&route.body)?;
    out.flush()
}
