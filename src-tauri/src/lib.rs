//! The KnowHub desktop app: a Tauri v2 shell over the engine crates.
//!
//! `main.rs` calls [`run`]. Commands ([`commands`]) are thin wrappers: the engine checks every
//! permission; this crate only converts records into the views of [`dto`] and streams events.
//! The TypeScript bindings in `ui/src/bindings.ts` are generated from these signatures by
//! [`specta_builder`] (`knowhub-desktop --export-bindings`, checked fresh by a test).

mod administration;
mod api_server;
mod both;
mod commands;
pub mod dto;
mod error;
mod library;
mod settings;
mod state;
mod team;
mod team_here;
#[cfg(test)]
mod team_tests;

use std::path::Path;

use tauri::Manager;
use tauri_specta::{Event, collect_commands, collect_events};

pub use error::CommandError;
pub use state::{AppConfig, AppState};

/// Where the generated bindings live, relative to the repository root.
pub const BINDINGS_PATH: &str = "ui/src/bindings.ts";

/// Every command and event the window may use; the single list both the app and the binding
/// generator read.
pub fn specta_builder() -> tauri_specta::Builder<tauri::Wry> {
    tauri_specta::Builder::<tauri::Wry>::new()
        .commands(collect_commands![
            commands::app_info,
            commands::sign_in,
            commands::ask,
            commands::cancel_ask,
            commands::conversations,
            commands::conversation,
            commands::delete_conversation,
            commands::memories,
            commands::forget_memory,
            commands::remember_conversation,
            commands::trace,
            commands::send_feedback,
            commands::open_document,
            commands::open_in_default_app,
            commands::sources,
            commands::drop_targets,
            commands::model_library,
            commands::download_model,
            commands::set_search_models,
            commands::restart_app,
            commands::ingest_dropped,
            commands::watch_folder,
            commands::unwatch_folder,
            commands::set_ingestion_paused,
            commands::retry_failed,
            commands::folder_tree,
            commands::set_folder_acl,
            commands::folder_readers,
            commands::users,
            commands::add_user,
            commands::remove_user,
            commands::set_role,
            commands::set_membership,
            commands::rotate_key,
            commands::revoke_keys,
            commands::set_llm,
            commands::data_sources,
            commands::team_models,
            commands::add_data_source,
            commands::remove_data_source,
            commands::web_sources,
            commands::add_web_source,
            commands::run_web_source,
            commands::remove_web_source,
            commands::api_server_status,
            commands::set_api_server,
            commands::team_status,
            commands::join_team,
            commands::leave_team,
            commands::set_team_answers,
            commands::finish_first_run,
        ])
        .events(collect_events![dto::IngestEvent])
}

/// The TypeScript bindings as text (what `--export-bindings` writes).
pub fn render_bindings() -> Result<String, String> {
    let dir = tempfile_dir()?;
    let path = dir.join("bindings.ts");
    specta_builder()
        .export(typescript(), &path)
        .map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(text)
}

fn typescript() -> specta_typescript::Typescript {
    specta_typescript::Typescript::default()
        .header("// Generated from the Rust commands by `knowhub-desktop --export-bindings`. Do not edit.\n")
}

fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("knowhub-bindings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Starts background ingestion (when the signed-in principal may run it) and forwards its
/// progress to the window as [`dto::IngestEvent`]s.
pub(crate) fn start_background(state: &AppState, app: &tauri::AppHandle) {
    let Some(events) = state.start_watching() else {
        return;
    };
    let app = app.clone();
    std::thread::spawn(move || {
        use knowhub_engine::WatchEvent as W;
        for e in events {
            let event = match e {
                W::Progress(p) => dto::IngestEvent::Progress {
                    queued: dto::n32(p.queued),
                    running: dto::n32(p.running),
                    failed: dto::n32(p.failed),
                    done: dto::n32(p.done),
                    paused: p.paused,
                    current: p.current,
                    pages_read: p.reading.map(|r| r.done),
                    pages: p.reading.map(|r| r.pages),
                    eta_secs: p.eta_secs.map(dto::n32),
                },
                W::File { path, outcome } => commands::file_event(path, &outcome),
                W::Idle => dto::IngestEvent::Idle,
                W::Warning { message } => dto::IngestEvent::Warning { message },
                W::WatchFailed { folder, reason } => dto::IngestEvent::Warning {
                    message: format!("{folder}: {reason}"),
                },
                _ => continue,
            };
            if event.emit(&app).is_err() {
                break;
            }
        }
    });
}

/// `knowhub-desktop --version`: for packaging checks and bug reports; needs no display.
#[allow(clippy::print_stdout)]
fn print_version() {
    println!("knowhub-desktop {}", env!("CARGO_PKG_VERSION"));
}

/// Entry point of the desktop app (and of its parser worker processes).
pub fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        // The engine runs parsers in sandboxed child processes of this same executable.
        Some("parse-worker") => {
            let memory = args
                .iter()
                .position(|a| a == "--memory-bytes")
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            knowhub_engine::run_worker(memory)?;
            return Ok(());
        }
        Some("--version" | "-V") => {
            print_version();
            return Ok(());
        }
        Some("--export-bindings") => {
            let out = args.get(2).map_or(BINDINGS_PATH, String::as_str);
            let text = render_bindings().map_err(anyhow::Error::msg)?;
            std::fs::write(Path::new(out), text)?;
            return Ok(());
        }
        _ => {}
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("KNOWHUB_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("warn,pdf_extract=off,lopdf=off")
            }),
        )
        .with_writer(std::io::stderr)
        .init();
    let config = AppConfig::from_env()?;
    let state = AppState::open(&config)?;
    let api = state.settings().api;
    let builder = specta_builder();
    tauri::Builder::default()
        .plugin(tauri_plugin_dialog::init())
        .manage(state)
        .invoke_handler(builder.invoke_handler())
        .setup(move |app| {
            builder.mount_events(app);
            let handle = app.handle().clone();
            // Opening the watcher reconciles folders: off the start-up path.
            std::thread::spawn(move || {
                let state = handle.state::<AppState>();
                start_background(&state, &handle);
            });
            // The HTTP API, when an administrator switched it on (off by default).
            if api.enabled {
                let handle = app.handle().clone();
                tauri::async_runtime::spawn(async move {
                    handle.state::<AppState>().apply_api(api).await;
                });
            }
            Ok(())
        })
        .on_window_event(|window, event| {
            if let tauri::WindowEvent::Destroyed = event {
                window.state::<AppState>().shutdown();
            }
        })
        .run(tauri::generate_context!())?;
    Ok(())
}
