//! The UI's TypeScript bindings (`ui/src/bindings.ts`) are generated from the Rust commands;
//! this fails when someone changed a command or view type without regenerating them.

#![allow(clippy::unwrap_used)]

use std::path::Path;

#[test]
fn typescript_bindings_are_fresh() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(knowhub_desktop::BINDINGS_PATH);
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let fresh = knowhub_desktop::render_bindings().unwrap();
    assert!(
        committed == fresh,
        "{} is stale: run `cargo run -p knowhub-desktop -- --export-bindings` and commit it",
        path.display()
    );
}
