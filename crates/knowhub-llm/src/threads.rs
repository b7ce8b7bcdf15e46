//! candle's thread count, worked out once per process instead of on every product.
//!
//! candle 0.11 asks `candle_core::utils::get_num_threads()` for the parallelism of every f32
//! matrix product (the attention products of each layer while generating, every linear layer
//! of the embedder and reranker). Unless `RAYON_NUM_THREADS` is set, that function counts the
//! physical cores again each time, and on Linux `num_cpus::get_physical()` does it by reading
//! and parsing `/proc/cpuinfo`: 11,955 reads in one `llm_speed` run of the 0.5B model (strace),
//! about 60 µs each on a 2-core machine and more where `/proc/cpuinfo` lists dozens of cores.
//! Setting the variable once, to the count candle would have found, turns each of those calls
//! into an environment lookup; the number of threads does not change.

// Setting an environment variable is `unsafe` since Rust 2024 (another thread could be reading
// the environment); the one function here states that contract to its callers.
#![allow(unsafe_code)]

/// The variable candle (and rayon) read for the thread count.
pub const THREADS_VAR: &str = "RAYON_NUM_THREADS";

/// Sets `RAYON_NUM_THREADS` to the thread count candle computes (physical cores, or the CPUs
/// of `CANDLE_CPU_MASK`), unless the user set it. Returns the count in force.
///
/// # Safety
///
/// It sets an environment variable, so no other thread may exist yet: call it first thing in
/// `main` (the contract of [`std::env::set_var`]).
pub unsafe fn settle_thread_count() -> usize {
    let threads = candle_core::utils::get_num_threads();
    if std::env::var_os(THREADS_VAR).is_none() {
        // SAFETY: the caller guarantees that this thread is the only one.
        unsafe { std::env::set_var(THREADS_VAR, threads.to_string()) };
    }
    threads
}
