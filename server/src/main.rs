//! `kqueen`: the portal server and its command line. All logic lives in the library.

fn main() -> std::process::ExitCode {
    kqueen_server::cli::main()
}
