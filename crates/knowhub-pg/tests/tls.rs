//! TLS to the team database: `sslmode=require` encrypts and verifies the server's certificate
//! (against `sslrootcert`), a certificate from another CA is refused with the reason, and an
//! address without `sslmode` stays plain. The server is the system's PostgreSQL (the bundled
//! build has no TLS), which has no pgvector: connections are checked, not migrations.

#![allow(clippy::unwrap_used)]

use knowhub_pg::{Database, PgCluster, PgError};

struct Certificates {
    ca: String,
    server_chain: String,
    server_key: String,
    other_ca: String,
}

fn ca(name: &str) -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    (params.self_signed(&key).unwrap(), key)
}

fn certificates() -> Certificates {
    let (ca_cert, ca_key) = ca("KnowHub test CA");
    let (other, _) = ca("Some other CA");
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let server = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
    Certificates {
        ca: ca_cert.pem(),
        server_chain: format!("{}{}", server.pem(), ca_cert.pem()),
        server_key: key.serialize_pem(),
        other_ca: other.pem(),
    }
}

fn encrypted(client: &mut postgres::Client) -> bool {
    client
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )
        .unwrap()
        .get(0)
}

#[test]
fn the_team_database_over_tls_is_encrypted_and_verified() {
    let certs = certificates();
    let Some(pg) = PgCluster::for_test_with_tls(&certs.server_chain, &certs.server_key) else {
        return;
    };
    pg.create_database("tls").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    let other_ca = dir.path().join("other-ca.pem");
    std::fs::write(&ca, &certs.ca).unwrap();
    std::fs::write(&other_ca, &certs.other_ca).unwrap();

    let url = pg.tls_url_of("tls", &ca).unwrap();
    let (config, tls) = knowhub_pg::tls::configure(&url).unwrap();
    assert!(encrypted(&mut config.connect(tls).unwrap()));
    // `Database::connect` gets as far as the migrations, which need pgvector: the connection
    // itself (TLS, verified) was made.
    match Database::connect(&url) {
        Err(PgError::Migration { .. } | PgError::Db(_)) => {}
        other => panic!("expected the migrations to fail for want of pgvector: {other:?}"),
    }

    // A server whose certificate the given CA did not sign is refused, and the error says why.
    let err = Database::connect(&pg.tls_url_of("tls", &other_ca).unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, PgError::Unreachable(_)), "{text}");
    assert!(
        text.contains("certificate") || text.contains("UnknownIssuer"),
        "{text}"
    );

    // The same server without sslmode: a plain connection, as before.
    let plain = url.split_once('?').unwrap().0;
    let (config, tls) = knowhub_pg::tls::configure(plain).unwrap();
    assert!(!encrypted(&mut config.connect(tls).unwrap()));
}
