//! `kqueen`: the portal server and its command line. All logic lives in the library.

/// mimalloc instead of glibc malloc: measured by the cluster_list bench (about +20% list
/// requests per second at 64 connections).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    kqueen_server::cli::main()
}
