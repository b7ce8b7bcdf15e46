//! API key generation, storage form and verification.

use knowhub_authz::{API_KEY_PREFIX, ApiKey, KeyHash, verify};

#[test]
fn generate_then_verify() {
    let key = ApiKey::generate().expect("rng");
    let stored = key.hash();
    assert!(verify(key.secret(), &stored));
    assert!(key.secret().starts_with(API_KEY_PREFIX));
    assert_eq!(key.secret().len(), 3 + 64);
    assert!(
        key.secret()[3..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
}

#[test]
fn keys_are_unique() {
    let a = ApiKey::generate().expect("rng");
    let b = ApiKey::generate().expect("rng");
    assert_ne!(a.secret(), b.secret());
    assert_ne!(a.hash(), b.hash());
    assert!(!verify(a.secret(), &b.hash()));
}

#[test]
fn wrong_keys_fail() {
    let key = ApiKey::generate().expect("rng");
    let stored = key.hash();
    let secret = key.secret();
    // One flipped character at the start, middle and end.
    for at in [3, 30, secret.len() - 1] {
        let mut wrong: Vec<u8> = secret.as_bytes().to_vec();
        wrong[at] = if wrong[at] == b'0' { b'1' } else { b'0' };
        let wrong = String::from_utf8(wrong).expect("ascii");
        assert!(!verify(&wrong, &stored), "flipped at {at}");
    }
    // Different lengths: truncated, extended, empty, prefix only, huge.
    assert!(!verify(&secret[..secret.len() - 1], &stored));
    assert!(!verify(&format!("{secret}0"), &stored));
    assert!(!verify(&format!("{secret} "), &stored));
    assert!(!verify("", &stored));
    assert!(!verify(API_KEY_PREFIX, &stored));
    assert!(!verify(&secret[3..], &stored));
    assert!(!verify(&"k".repeat(1 << 16), &stored));
    assert!(!verify(&secret.to_uppercase(), &stored));
}

#[test]
fn hash_never_contains_the_secret() {
    for _ in 0..16 {
        let key = ApiKey::generate().expect("rng");
        let hex = key.hash().to_string();
        let json = serde_json::to_string(&key.hash()).expect("json");
        let secret_body = &key.secret()[3..];
        for stored in [&hex, &json, &format!("{:?}", key.hash())] {
            assert!(!stored.contains(key.secret()));
            assert!(!stored.contains(secret_body));
            // Not even a sizeable chunk of it.
            for chunk in secret_body.as_bytes().chunks(16) {
                let chunk = std::str::from_utf8(chunk).expect("ascii");
                assert!(!stored.contains(chunk));
            }
        }
        assert!(!format!("{key:?}").contains(secret_body));
    }
}

#[test]
fn key_hash_round_trips() {
    let key = ApiKey::generate().expect("rng");
    let stored = key.hash();
    let hex = stored.to_string();
    assert_eq!(hex.len(), 64);
    assert_eq!(hex.parse::<KeyHash>().expect("hex"), stored);
    assert_eq!(hex.to_uppercase().parse::<KeyHash>().expect("hex"), stored);
    let json = serde_json::to_string(&stored).expect("json");
    assert_eq!(
        serde_json::from_str::<KeyHash>(&json).expect("json"),
        stored
    );
    assert!(verify(key.secret(), &hex.parse().expect("hex")));

    assert!("".parse::<KeyHash>().is_err());
    assert!(hex[1..].parse::<KeyHash>().is_err());
    assert!(format!("{hex}0").parse::<KeyHash>().is_err());
    assert!(format!("{}g", &hex[1..]).parse::<KeyHash>().is_err());
    assert!("é".repeat(32).parse::<KeyHash>().is_err());
}

#[test]
fn known_vector() {
    // SHA-256("abc") from FIPS 180-2.
    assert_eq!(
        KeyHash::of("abc").to_string(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
