//! Prompt-processing and generation speed of the local models on the CPU.
//!
//! ```text
//! cargo run --release -p knowhub-llm --example llm_speed [-- [--no-requant] [--no-copies] [--unsettled-threads] MODEL.gguf ...]
//! ```
//!
//! `--unsettled-threads` skips `knowhub_llm::threads::settle_thread_count` (candle then counts
//! the cores on every matrix product, as before the CLI and the app settled it), to compare.
//! `--no-requant` loads the weights as stored (no Q8_0 conversion of Q4_1/Q5_0/Q5_1 tensors),
//! `--no-copies` keeps no copies of the layers for prompt processing (8-bit tiles or dense f32), to
//! compare; `KNOWHUB_NO_GEMV=1` turns our one-token kernels (AVX-512 or AVX2) and the AVX-512 VNNI tiles
//! off (candle's products, dense f32 copies for prompts).
//!
//! Prompts are timed cold (the prefix cache is emptied before each run); one more line shows a
//! prompt that shares its beginning with the previous one (the cache's case).
//!
//! Without arguments it measures the Qwen2.5-Coder 0.5B and 1.5B models (and SmolLM2-135M) in the
//! models folder (`KNOWHUB_MODELS_DIR` or `<repo>/models`), skipping missing files. For each
//! model: load time, the cost of rebuilding the weights (what a fresh `ModelWeights` per request
//! would cost) against clearing the KV cache (what `LocalGguf` does), then a ~500-token prompt
//! and a 128-token greedy answer (best of 2 runs).

#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use knowhub_llm::{ChatRequest, Device, Llm, LoadOptions, LocalGguf, Message};

const MODELS: &[&str] = &[
    "smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen2.5-coder-0.5b-instruct/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "qwen2.5-coder-1.5b-instruct/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
];

const PASSAGE: &str = "Employees who travel for work must submit an expense claim within 30 days \
of returning. The claim lists every expense with its date, amount and purpose, and each item \
needs a receipt. Meals are reimbursed up to the daily allowance of the destination city; hotel \
costs up to the company's negotiated rate. Taxis are allowed when no public transport is \
available or when travelling late at night. Claims go to the employee's manager first, then \
to the finance department, which pays approved claims with the next monthly salary. \
员工出差回来后，应在 30 天内提交报销单，并附上所有发票。";

fn models_dir() -> PathBuf {
    std::env::var_os("KNOWHUB_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(
                std::env::var("CARGO_MANIFEST_DIR")
                    .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string()),
            )
            .join("../../models")
        })
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn measure(path: &Path, options: &LoadOptions) {
    let t = Instant::now();
    let llm = match LocalGguf::load_with(path, &Device::Cpu, options) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    let load = t.elapsed();
    let rebuild = llm.rebuild_weights().unwrap();

    let context = PASSAGE.repeat(4);
    let req = ChatRequest {
        max_tokens: 128,
        ..ChatRequest::new(vec![
            Message::system(format!("Answer from this text only:\n{context}")),
            Message::user(
                "How long do employees have to submit an expense claim, and who approves it? Explain in detail.",
            ),
        ])
    };
    // Warm-up (first-touch page faults, thread pool start).
    let _ = llm.complete(&ChatRequest {
        max_tokens: 4,
        ..req.clone()
    });

    let mut best: Option<(f64, f64, usize, usize)> = None;
    let mut ttft = f64::MAX;
    for _ in 0..2 {
        llm.clear_prefix_cache();
        let r = llm.complete(&req).unwrap();
        ttft = ttft.min(secs(r.time_to_first_token));
        let pp = r.prompt_tokens as f64 / secs(r.time_to_first_token);
        let steps = r.completion_tokens.saturating_sub(1).max(1);
        let tg = steps as f64 / secs(r.elapsed - r.time_to_first_token).max(1e-9);
        if best.is_none_or(|b| pp + tg > b.0 + b.1) {
            best = Some((pp, tg, r.prompt_tokens, r.completion_tokens));
        }
    }
    let (pp, tg, np, nc) = best.unwrap();
    // The same instructions and passage, another question: only the question is new.
    let follow_up = ChatRequest {
        max_tokens: 1,
        ..ChatRequest::new(vec![
            req.messages[0].clone(),
            Message::user("Which costs may be reimbursed, and up to what amount?"),
        ])
    };
    let warm = llm.complete(&follow_up).unwrap();
    let zh = llm
        .complete(&ChatRequest {
            max_tokens: 48,
            ..ChatRequest::new(vec![Message::user("用一句话介绍北京。")])
        })
        .unwrap();
    println!(
        "{:<44} load {:>5.2}s  rebuild weights {:>5.2}s  prompt {np:>4} tok {pp:>7.1} tok/s  \
         TTFT {ttft:>5.2}s  generate {nc:>3} tok {tg:>6.1} tok/s  prefill copies: {}",
        llm.model_id(),
        secs(load),
        secs(rebuild),
        if llm.has_prefill_copies() {
            "yes"
        } else {
            "no"
        },
    );
    println!(
        "    same beginning, new question ({} tok): TTFT {:.2}s",
        warm.prompt_tokens,
        secs(warm.time_to_first_token)
    );
    println!("    zh sample: {:?}", zh.text);
}

fn main() {
    // As the CLI and the desktop app do, unless `--unsettled-threads` (candle counting the cores
    // on every product, to compare). SAFETY: first thing in `main`, no other thread yet.
    if !std::env::args_os().any(|a| a == "--unsettled-threads") {
        #[allow(unsafe_code)]
        unsafe {
            knowhub_llm::threads::settle_thread_count();
        }
    }
    let mut options = LoadOptions::default();
    let mut args: Vec<PathBuf> = Vec::new();
    for a in std::env::args_os().skip(1) {
        if a == "--unsettled-threads" {
            continue;
        } else if a == "--no-requant" {
            options.cpu_q8_requantize = false;
        } else if a == "--no-copies" {
            options.prefill_copy_bytes = 0;
        } else {
            args.push(PathBuf::from(a));
        }
    }
    let paths: Vec<PathBuf> = if args.is_empty() {
        MODELS
            .iter()
            .map(|m| models_dir().join(m))
            .filter(|p| {
                let ok = p.is_file();
                if !ok {
                    eprintln!("skipping missing {}", p.display());
                }
                ok
            })
            .collect()
    } else {
        args
    };
    println!(
        "threads: {} (RAYON_NUM_THREADS={}), Q8_0 conversion: {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into()),
        if options.cpu_q8_requantize {
            "on"
        } else {
            "off"
        }
    );
    for p in paths {
        measure(&p, &options);
    }
}
