//! `my-scheduler`: the whole `kubesched` command with two plugins of our own.

fn main() -> std::process::ExitCode {
    kubesched::cli::Command::new()
        .name("my-scheduler")
        .about("kube-scheduler's decisions with ZoneAllowlist and PreferSsd")
        .version(env!("CARGO_PKG_VERSION"))
        .with_plugin("ZoneAllowlist", my_scheduler::zone_allowlist)
        .with_plugin("PreferSsd", my_scheduler::prefer_ssd)
        .run()
}
