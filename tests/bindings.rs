//! The UI's TypeScript bindings (`ui/src/bindings.ts`) are generated from the Rust commands;
//! this fails when someone changed a command or view type without regenerating them.

#![allow(clippy::unwrap_used)]

use std::path::Path;

#[test]
fn typescript_bindings_are_fresh() {
    let path = Path::new(
        &std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
    )
    .join(knowhub_desktop::BINDINGS_PATH);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let fresh = knowhub_desktop::render_bindings().unwrap();
    assert!(
        committed == fresh,
        "{} is stale: run `cargo run -p knowhub-desktop -- --export-bindings` and commit it",
        path.display()
    );
}
