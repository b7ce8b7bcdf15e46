//! TLS to the team database.
//!
//! `sslmode=require` in the address turns it on, and the server's certificate is then always
//! verified (rustls): against the CA file named by `sslrootcert=` when the address has one,
//! else the system's roots. That is stricter than libpq's `require`, which encrypts without
//! checking whom it talks to; `verify-ca` and `verify-full` are accepted as the same thing.
//! Without it (`disable`, `prefer` or nothing) connections are plain, for a Unix socket or a
//! trusted network: an opportunistic `prefer` would fail against the self-signed certificate
//! many servers ship with, where a plain connection works.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use postgres::Socket;
use postgres::config::SslMode;
use postgres::tls::MakeTlsConnect;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::{PgError, Result};

/// The connector every connection of a [`Database`](crate::Database) is made with, whether
/// or not the address asks for TLS (one pool type either way).
#[derive(Clone)]
pub struct Tls {
    rustls: MakeRustlsConnect,
    enabled: bool,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("enabled", &self.enabled)
            .finish()
    }
}

type Rustls = <MakeRustlsConnect as MakeTlsConnect<Socket>>::TlsConnect;

impl MakeTlsConnect<Socket> for Tls {
    type Stream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;
    type TlsConnect = Rustls;
    type Error = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Error;

    fn make_tls_connect(&mut self, hostname: &str) -> Result<Rustls, Self::Error> {
        // The driver asks for every host, also when TLS is off and for Unix sockets (no name):
        // the name only matters, and is only checked, when TLS is on.
        let name = if self.enabled { hostname } else { "localhost" };
        MakeTlsConnect::<Socket>::make_tls_connect(&mut self.rustls, name)
    }
}

/// What KnowHub reads from an address before the driver sees it (the driver knows neither
/// `sslrootcert` nor the `verify-*` modes).
#[derive(Debug, Default, PartialEq, Eq)]
struct TlsOptions {
    root_cert: Option<PathBuf>,
}

/// The driver's configuration and the connector for `address`.
pub fn configure(address: &str) -> Result<(postgres::Config, Tls)> {
    let (address, options) = take_tls_options(address)?;
    let mut config = postgres::Config::from_str(&address).map_err(|e| {
        PgError::Address(format!("{e} (expected postgres://user@host:port/database)"))
    })?;
    let wanted = config.get_ssl_mode() == SslMode::Require || options.root_cert.is_some();
    if !wanted {
        config.ssl_mode(SslMode::Disable);
        let rustls = MakeRustlsConnect::new(client_config(rustls::RootCertStore::empty())?);
        return Ok((
            config,
            Tls {
                rustls,
                enabled: false,
            },
        ));
    }
    if config
        .get_hosts()
        .iter()
        .any(|h| matches!(h, postgres::config::Host::Unix(_)))
    {
        return Err(PgError::Address(
            "sslmode=require needs a TCP host: PostgreSQL does not encrypt Unix sockets".into(),
        ));
    }
    config.ssl_mode(SslMode::Require);
    let roots = match &options.root_cert {
        Some(path) => roots_from_file(path)?,
        None => system_roots()?,
    };
    let rustls = MakeRustlsConnect::new(client_config(roots)?);
    Ok((
        config,
        Tls {
            rustls,
            enabled: true,
        },
    ))
}

fn client_config(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| PgError::Address(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

fn roots_from_file(path: &std::path::Path) -> Result<rustls::RootCertStore> {
    let unreadable = |e: &dyn std::fmt::Display| {
        PgError::Address(format!("sslrootcert {}: {e}", path.display()))
    };
    let pem = std::fs::read(path).map_err(|e| unreadable(&e))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        let cert = cert.map_err(|e| unreadable(&e))?;
        roots.add(cert).map_err(|e| unreadable(&e))?;
    }
    if roots.is_empty() {
        return Err(unreadable(&"no PEM certificate in the file"));
    }
    Ok(roots)
}

fn system_roots() -> Result<rustls::RootCertStore> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "none installed".into());
        return Err(PgError::Address(format!(
            "sslmode=require: no system CA certificates to verify the server with ({why}); \
             name the server's CA with sslrootcert=/path/to/ca.pem"
        )));
    }
    Ok(roots)
}

/// Removes `sslrootcert=…` from `address` (a URL's query or a key=value string) and rewrites
/// `sslmode=verify-ca|verify-full` to `require`.
fn take_tls_options(address: &str) -> Result<(String, TlsOptions)> {
    let mut options = TlsOptions::default();
    let is_url = address.starts_with("postgres://") || address.starts_with("postgresql://");
    if is_url {
        let Some((base, query)) = address.split_once('?') else {
            return Ok((address.to_owned(), options));
        };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            match pair.split_once('=') {
                Some(("sslrootcert", value)) => {
                    options.root_cert = Some(PathBuf::from(percent_decode(value)?));
                }
                Some(("sslmode", "verify-ca" | "verify-full")) => kept.push("sslmode=require"),
                _ => kept.push(pair),
            }
        }
        let rebuilt = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        return Ok((rebuilt, options));
    }
    let mut kept = Vec::new();
    for (key, value, raw) in key_values(address)? {
        match (key, value.as_str()) {
            ("sslrootcert", _) => options.root_cert = Some(PathBuf::from(value)),
            ("sslmode", "verify-ca" | "verify-full") => kept.push("sslmode=require"),
            _ => kept.push(raw),
        }
    }
    Ok((kept.join(" "), options))
}

/// The `key=value` pairs of a libpq-style string as (key, unquoted value, original text).
fn key_values(s: &str) -> Result<Vec<(&str, String, &str)>> {
    let mut out = Vec::new();
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let start = rest;
        let eq = rest
            .find('=')
            .ok_or_else(|| PgError::Address(format!("expected key=value near {rest:?}")))?;
        let key = rest[..eq].trim();
        rest = rest[eq + 1..].trim_start();
        let mut value = String::new();
        if let Some(quoted) = rest.strip_prefix('\'') {
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, next)) = chars.next() {
                            value.push(next);
                        }
                    }
                    '\'' => {
                        end = Some(i + 1);
                        break;
                    }
                    c => value.push(c),
                }
            }
            let end = end.ok_or_else(|| PgError::Address("unterminated quoted value".into()))?;
            rest = &quoted[end..];
        } else {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            value.push_str(&rest[..end]);
            rest = &rest[end..];
        }
        let raw = &start[..start.len() - rest.len()];
        out.push((key, value, raw.trim()));
        rest = rest.trim_start();
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| PgError::Address(format!("bad percent-encoding in {s:?}")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| PgError::Address(format!("{s:?} is not UTF-8")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_of_both_address_forms() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("postgres://u@h/db", "postgres://u@h/db", None),
            (
                "postgres://u@h:5432/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20x.pem",
                "postgres://u@h:5432/db?sslmode=require",
                Some("/etc/ca x.pem"),
            ),
            (
                "postgresql://u@h/db?application_name=kh&sslrootcert=/ca.pem",
                "postgresql://u@h/db?application_name=kh",
                Some("/ca.pem"),
            ),
            (
                "host=db.internal user=kh sslmode=verify-ca sslrootcert='/my ca.pem' dbname=k",
                "host=db.internal user=kh sslmode=require dbname=k",
                Some("/my ca.pem"),
            ),
            ("host=/run/pg dbname=k", "host=/run/pg dbname=k", None),
        ];
        for (input, rest, root) in cases {
            let (got, options) = take_tls_options(input).unwrap();
            assert_eq!(&got, rest, "{input}");
            assert_eq!(
                options.root_cert.as_deref(),
                root.map(std::path::Path::new),
                "{input}"
            );
        }
        assert!(take_tls_options("host='unterminated").is_err());
        assert!(take_tls_options("postgres://h/db?sslrootcert=%zz").is_err());
    }

    #[test]
    fn tls_is_used_only_when_asked_for_and_never_over_a_socket() {
        let (config, _) = configure("postgres://u@h/db").unwrap();
        assert_eq!(config.get_ssl_mode(), SslMode::Disable);
        let (config, _) = configure("postgres://u@h/db?sslmode=prefer").unwrap();
        assert_eq!(config.get_ssl_mode(), SslMode::Disable);
        let err = configure("host=/run/pg dbname=k sslmode=require").unwrap_err();
        assert!(err.to_string().contains("Unix sockets"), "{err}");
        let err = configure("postgres://u@h/db?sslrootcert=/no/such/ca.pem").unwrap_err();
        assert!(err.to_string().contains("/no/such/ca.pem"), "{err}");
    }
}
