//! The client half of the `kqueen` command: the portal's REST API from a terminal (`login`,
//! `clusters`, `apps`, `addons`, `fleet`), kubeconfig contexts (`kubeconfig`, with `--exec`
//! a context whose credential kubectl fetches through `get-token` whenever it expires).
//! Every command goes through [`api::Api`] to `/api/v1`; nothing here reads the server's
//! database or settings. Errors end the command with a message on standard error and an exit
//! code that says what kind of failure it was ([`error::CliError::exit_code`]).

mod api;
mod args;
mod commands;
mod config;
mod error;
mod exec_credential;
mod kubeconfig;
mod output;
mod resolve;

use std::process::ExitCode;

pub use args::ClientCommand;
pub use error::CliError;

/// Runs one client command on its own small runtime; prints a failure on standard error.
pub fn main(command: ClientCommand) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(commands::run(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
