fn main() -> anyhow::Result<()> {
    knowhub_desktop::run()
}
