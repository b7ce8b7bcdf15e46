//! The KnowHub desktop shell. The Tauri window arrives with the desktop-app issue; until then
//! this crate only hosts the workspace-level integration tests in `tests/`.

/// Entry point of the desktop app.
pub fn run() -> anyhow::Result<()> {
    anyhow::bail!("the desktop window is not built yet; use the `knowhub` command-line tool")
}
