//! The `kubesched` binary: the command of `kubesched_cli` with the in-tree plugins.

/// mimalloc keeps freed memory for the next allocation, where the system allocator hands
/// a cycle's large tables back to the kernel and pays a page fault per page to get them
/// again (a quarter of `bench --mode exact`'s time on 5,000 nodes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kubesched_cli::Command::new().run()
}
