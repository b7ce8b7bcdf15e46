//! `threads::settle_thread_count` in a process of its own (no test harness: the contract is
//! that no other thread exists when it runs).

#![allow(unsafe_code, clippy::print_stdout, clippy::unwrap_used, clippy::panic)]

use knowhub_llm::threads::{THREADS_VAR, settle_thread_count};

fn main() {
    // SAFETY: `harness = false`: this is the process's only thread.
    unsafe { std::env::remove_var(THREADS_VAR) };
    // What candle computes on its own (this is the call that reads /proc/cpuinfo each time).
    let unsettled = candle_core::utils::get_num_threads();
    assert!(unsettled >= 1);

    // SAFETY: still the only thread.
    let settled = unsafe { settle_thread_count() };
    assert_eq!(settled, unsettled, "the thread count must not change");
    assert_eq!(std::env::var(THREADS_VAR).unwrap(), unsettled.to_string());
    assert_eq!(candle_core::utils::get_num_threads(), unsettled);

    // A count the user chose is kept.
    // SAFETY: still the only thread.
    unsafe { std::env::set_var(THREADS_VAR, "3") };
    let kept = unsafe { settle_thread_count() };
    assert_eq!(kept, 3);
    assert_eq!(std::env::var(THREADS_VAR).unwrap(), "3");
    println!("thread_count: ok ({unsettled} threads)");
}
