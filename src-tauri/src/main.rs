fn main() -> anyhow::Result<()> {
    // candle's thread count, worked out once (it rereads /proc/cpuinfo on every matrix product
    // otherwise). SAFETY: first thing in `main`, before any thread exists.
    #[allow(unsafe_code)]
    unsafe {
        knowhub_llm::threads::settle_thread_count();
    }
    knowhub_desktop::run()
}
