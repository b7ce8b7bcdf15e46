//! `knowhub bench device`: the models on the GPU (`--features cuda` or `metal`) against the
//! same models on the CPU — do they agree, and how fast is each.
//!
//! A GPU build is only worth shipping when its answers match the CPU's: the embedder's vectors
//! must point the same way (else search results change with the machine) and the answer
//! model's greedy text should be the same (floating-point order may flip a near-tie). This
//! prints, for the embedder of `--embedder` and the local model of `--llm`:
//!
//! - embeddings: the lowest and mean cosine between each text's CPU and GPU vector, and
//!   passages/s on each device;
//! - generation: whether the greedy answers are identical (else where they part), time to
//!   first token and decode tokens/s on each device.
//!
//! It exits with code 2 when the devices disagree (a cosine below 0.99), 1 when there is no GPU.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use knowhub_agent::providers::{DEFAULT_LOCAL_LLM, LlmChoice, installed_model_path};
use knowhub_engine::{DeviceChoice, ModelConfig, ModelSet};
use knowhub_llm::{ChatRequest, Device, Llm, LocalGguf, Message};
use serde::Serialize;

use crate::ModelArgs;
use crate::ask::LlmArgs;

/// Below this cosine a text's GPU vector is not the CPU's.
const MIN_COSINE: f32 = 0.99;

#[derive(Debug, clap::Args)]
pub(crate) struct DeviceArgs {
    /// Texts to embed on each device (demo paragraphs and queries, English and Chinese).
    #[arg(long, default_value_t = 256)]
    texts: usize,
    /// Tokens each greedy answer may take.
    #[arg(long, default_value_t = 96)]
    tokens: usize,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    gpu: String,
    embedding: Option<EmbeddingRow>,
    generation: Vec<GenerationRow>,
    skipped: Vec<String>,
}

#[derive(Debug, Serialize)]
struct EmbeddingRow {
    model: String,
    texts: usize,
    min_cosine: f32,
    mean_cosine: f32,
    cpu_passages_per_s: f64,
    gpu_passages_per_s: f64,
}

#[derive(Debug, Serialize)]
struct GenerationRow {
    model: String,
    prompt: &'static str,
    identical: bool,
    /// Characters the two answers share from the start.
    common_prefix_chars: usize,
    cpu_text: String,
    gpu_text: String,
    cpu_ttft_s: f64,
    gpu_ttft_s: f64,
    cpu_decode_tok_s: f64,
    gpu_decode_tok_s: f64,
}

pub(crate) fn run(args: &DeviceArgs, models: &ModelArgs, llm: &LlmArgs) -> Result<ExitCode> {
    let gpu = DeviceChoice::Auto.device();
    if gpu.is_cpu() {
        let why = if cfg!(any(feature = "cuda", feature = "metal")) {
            "no GPU answered (CUDA device 0 / Metal device 0)"
        } else {
            "this build has no GPU support (build knowhub-cli with --features cuda or metal)"
        };
        eprintln!("knowhub bench device: {why}");
        return Ok(ExitCode::from(1));
    }
    let mut report = Report {
        gpu: format!("{:?}", gpu.location()),
        embedding: None,
        generation: Vec::new(),
        skipped: Vec::new(),
    };
    embedding(args, models, &mut report)?;
    generation(args, llm, &gpu, &mut report)?;

    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    let disagree = report
        .embedding
        .as_ref()
        .is_some_and(|e| e.min_cosine < MIN_COSINE);
    Ok(if disagree {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}

fn embedding(args: &DeviceArgs, models: &ModelArgs, report: &mut Report) -> Result<()> {
    let config = models.config()?;
    let on = |device| -> Result<ModelSet> {
        Ok(ModelSet::load(&ModelConfig {
            device,
            require_embedder: true,
            ..config.clone()
        })?)
    };
    let (cpu, gpu) = match (on(DeviceChoice::Cpu), on(DeviceChoice::Auto)) {
        (Ok(c), Ok(g)) => (c, g),
        (Err(e), _) | (_, Err(e)) => {
            report.skipped.push(format!("embeddings: {e:#}"));
            return Ok(());
        }
    };
    let (Some(cpu), Some(gpu)) = (cpu.embedder, gpu.embedder) else {
        report
            .skipped
            .push("embeddings: no embedder configured (--embedder off)".into());
        return Ok(());
    };
    let texts = texts(args.texts);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // Warm-up on each device (kernel compilation, first allocations) before timing.
    cpu.embed_passages(&refs[..refs.len().min(4)])?;
    gpu.embed_passages(&refs[..refs.len().min(4)])?;
    let t = Instant::now();
    let on_cpu = cpu.embed_passages(&refs)?;
    let cpu_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let on_gpu = gpu.embed_passages(&refs)?;
    let gpu_s = t.elapsed().as_secs_f64();
    let cosines: Vec<f32> = on_cpu
        .iter()
        .zip(&on_gpu)
        .map(|(a, b)| cosine(a, b))
        .collect();
    let min_cosine = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean_cosine = cosines.iter().sum::<f32>() / cosines.len().max(1) as f32;
    report.embedding = Some(EmbeddingRow {
        model: cpu.model_id().to_owned(),
        texts: refs.len(),
        min_cosine,
        mean_cosine,
        cpu_passages_per_s: refs.len() as f64 / cpu_s.max(1e-9),
        gpu_passages_per_s: refs.len() as f64 / gpu_s.max(1e-9),
    });
    Ok(())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(f32::MIN_POSITIVE)
}

/// `n` texts: the demo corpus's paragraphs (when the repository is at hand) and short queries,
/// English and Chinese, repeated up to `n`.
fn texts(n: usize) -> Vec<String> {
    let mut texts: Vec<String> = [
        "How many days of annual leave do new employees get?",
        "新员工的试用期是多长时间？",
        "Which invoices were paid late last quarter?",
        "报销单需要在出差回来后多少天内提交？",
    ]
    .map(str::to_owned)
    .to_vec();
    let root = std::env::current_dir()
        .ok()
        .and_then(|cwd| knowhub_models::find_repo_root(&cwd));
    if let Some(root) = root {
        texts.extend(crate::bench::demo_paragraphs(&root.join("assets/demo")));
    }
    texts.into_iter().cycle().take(n.max(1)).collect()
}

/// The GGUF file `--llm` names (the default local model for `local`); `None` for `off` and
/// servers (nothing runs here).
fn gguf_of(llm: &LlmArgs) -> Result<Option<PathBuf>> {
    let choice = LlmChoice::parse(&llm.llm, llm.llm_url.clone(), llm.llm_model.clone(), None)?;
    Ok(match choice {
        LlmChoice::Default => installed_model_path(DEFAULT_LOCAL_LLM),
        LlmChoice::Named { name } => Some(
            installed_model_path(&name)
                .with_context(|| format!("model {name} is not installed"))?,
        ),
        LlmChoice::File { path } => Some(path),
        LlmChoice::OpenAi { .. } | LlmChoice::Off => None,
    })
}

const PASSAGE: &str = "Employees who travel for work must submit an expense claim within 30 days \
of returning. Each item needs a receipt. Meals are reimbursed up to the daily allowance of the \
destination city. Claims go to the employee's manager first, then to the finance department, \
which pays approved claims with the next monthly salary. 员工出差回来后，应在 30 天内提交报销单，\
并附上所有发票；报销先由直属经理审批，再交财务部。";

fn generation(args: &DeviceArgs, llm: &LlmArgs, gpu: &Device, report: &mut Report) -> Result<()> {
    let Some(path) = gguf_of(llm)? else {
        report
            .skipped
            .push("generation: --llm is not a local model".into());
        return Ok(());
    };
    let load = |device: &Device| {
        LocalGguf::load(&path, device)
            .with_context(|| format!("cannot load {} on {device:?}", path.display()))
    };
    let cpu = load(&Device::Cpu)?;
    let on_gpu = load(gpu)?;
    let prompts: [(&'static str, Vec<Message>); 2] = [
        (
            "en",
            vec![
                Message::system(format!("Answer from this text only:\n{PASSAGE}")),
                Message::user(
                    "How long do employees have to submit an expense claim, and who approves it?",
                ),
            ],
        ),
        (
            "zh",
            vec![
                Message::system(format!("只根据这段文字回答：\n{PASSAGE}")),
                Message::user("报销单要在多少天内提交？由谁审批？"),
            ],
        ),
    ];
    for (name, messages) in prompts {
        let req = ChatRequest {
            max_tokens: args.tokens,
            ..ChatRequest::new(messages)
        };
        let run = |model: &LocalGguf| -> Result<knowhub_llm::ChatResponse> {
            // A first call warms the device (kernels, allocations); the second is timed.
            model.complete(&ChatRequest {
                max_tokens: 2,
                ..req.clone()
            })?;
            model.clear_prefix_cache();
            Ok(model.complete(&req)?)
        };
        let (c, g) = (run(&cpu)?, run(&on_gpu)?);
        let decode = |r: &knowhub_llm::ChatResponse| {
            let steps = r.completion_tokens.saturating_sub(1).max(1);
            steps as f64 / (r.elapsed - r.time_to_first_token).as_secs_f64().max(1e-9)
        };
        let common = c
            .text
            .chars()
            .zip(g.text.chars())
            .take_while(|(a, b)| a == b)
            .count();
        report.generation.push(GenerationRow {
            model: cpu.model_id().to_owned(),
            prompt: name,
            identical: c.text == g.text,
            common_prefix_chars: common,
            cpu_ttft_s: c.time_to_first_token.as_secs_f64(),
            gpu_ttft_s: g.time_to_first_token.as_secs_f64(),
            cpu_decode_tok_s: decode(&c),
            gpu_decode_tok_s: decode(&g),
            cpu_text: c.text,
            gpu_text: g.text,
        });
    }
    Ok(())
}

fn print_report(r: &Report) {
    println!("GPU: {}", r.gpu);
    if let Some(e) = &r.embedding {
        println!();
        println!(
            "| embedder | texts | min cosine | mean cosine | CPU passages/s | GPU passages/s |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        println!(
            "| {} | {} | {:.5} | {:.5} | {:.1} | {:.1} |",
            e.model,
            e.texts,
            e.min_cosine,
            e.mean_cosine,
            e.cpu_passages_per_s,
            e.gpu_passages_per_s
        );
    }
    if !r.generation.is_empty() {
        println!();
        println!(
            "| model | prompt | same text | CPU TTFT s | GPU TTFT s | CPU decode tok/s | GPU decode tok/s |"
        );
        println!("|---|---|---|---:|---:|---:|---:|");
        for g in &r.generation {
            let same = if g.identical {
                "yes".to_owned()
            } else {
                format!("no (same for {} chars)", g.common_prefix_chars)
            };
            println!(
                "| {} | {} | {same} | {:.3} | {:.3} | {:.1} | {:.1} |",
                g.model,
                g.prompt,
                g.cpu_ttft_s,
                g.gpu_ttft_s,
                g.cpu_decode_tok_s,
                g.gpu_decode_tok_s
            );
        }
        for g in r.generation.iter().filter(|g| !g.identical) {
            println!();
            println!("{} ({}) CPU: {:?}", g.model, g.prompt, g.cpu_text);
            println!("{} ({}) GPU: {:?}", g.model, g.prompt, g.gpu_text);
        }
    }
    for s in &r.skipped {
        println!("skipped: {s}");
    }
}
