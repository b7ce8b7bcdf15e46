//! One HTTP GET, without following redirects (the crawler follows them itself, to keep each
//! hop in scope and to notice loops), with conditional headers and a body size cap.

use std::time::Duration;

use url::Url;

/// Validators from an earlier fetch, sent so that an unchanged page costs a 304.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// A response as the crawler sees it.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub status: u16,
    /// `Location` of a redirect.
    pub location: Option<String>,
    /// The media type, lowercased, without parameters.
    pub content_type: Option<String>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// `X-Robots-Tag` values.
    pub robots_tag: Vec<String>,
    pub body: Vec<u8>,
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The server announced, or sent, more than the page budget.
    #[error("larger than {limit} bytes{}", .announced.map(|n| format!(" ({n} bytes announced)")).unwrap_or_default())]
    TooLarge { limit: u64, announced: Option<u64> },
    /// Connection, TLS, DNS or timeout problems: worth trying again on the next run.
    #[error("{0}")]
    Network(String),
}

/// Performs GET requests. The real one is [`HttpFetcher`]; tests may supply their own.
pub trait Fetcher {
    fn get(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        max_bytes: u64,
    ) -> Result<Response, FetchError>;
}

/// GETs over HTTP(S) with `ureq` (rustls, the system's trust store).
#[derive(Debug)]
pub struct HttpFetcher {
    agent: ureq::Agent,
}

impl HttpFetcher {
    pub fn new(user_agent: &str, timeout: Duration) -> HttpFetcher {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15).min(timeout)))
            .timeout_global(Some(timeout))
            .user_agent(user_agent)
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .build()
            .into();
        HttpFetcher { agent }
    }
}

fn header(resp: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

impl Fetcher for HttpFetcher {
    fn get(
        &self,
        url: &Url,
        validators: Option<&Validators>,
        max_bytes: u64,
    ) -> Result<Response, FetchError> {
        let mut request = self.agent.get(url.as_str());
        if let Some(v) = validators {
            if let Some(etag) = &v.etag {
                request = request.header("If-None-Match", etag);
            }
            if let Some(lm) = &v.last_modified {
                request = request.header("If-Modified-Since", lm);
            }
        }
        let mut resp = request
            .call()
            .map_err(|e| FetchError::Network(e.to_string()))?;
        let announced = header(&resp, "content-length").and_then(|n| n.parse::<u64>().ok());
        if announced.is_some_and(|n| n > max_bytes) {
            return Err(FetchError::TooLarge {
                limit: max_bytes,
                announced,
            });
        }
        let mut out = Response {
            status: resp.status().as_u16(),
            location: header(&resp, "location"),
            content_type: header(&resp, "content-type").map(|t| {
                t.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            }),
            etag: header(&resp, "etag"),
            last_modified: header(&resp, "last-modified"),
            robots_tag: resp
                .headers()
                .get_all("x-robots-tag")
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_owned))
                .collect(),
            body: Vec::new(),
        };
        if out.status == 200 {
            out.body = resp
                .body_mut()
                .with_config()
                .limit(max_bytes)
                .read_to_vec()
                .map_err(|e| match e {
                    ureq::Error::BodyExceedsLimit(_) => FetchError::TooLarge {
                        limit: max_bytes,
                        announced,
                    },
                    other => FetchError::Network(other.to_string()),
                })?;
        }
        Ok(out)
    }
}
