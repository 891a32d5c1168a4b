//! The `kubesched` binary: the command of `kubesched_cli` with the in-tree plugins.

fn main() -> std::process::ExitCode {
    kubesched_cli::Command::new().run()
}
