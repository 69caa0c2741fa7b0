//! The command line: `kqueen serve`, operator commands that act on the same database, and
//! the client commands of kqueen-cli (`login`, `clusters`, `kubeconfig`…), which only talk to
//! a portal's API.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kqueen_core::page::Page;
use kqueen_core::tenant::{NewTenant, TenantFilter};
use kqueen_core::{Actor, Kqueen};

use crate::settings::Settings;
use crate::{startup, telemetry};

/// KQueen: multi-cloud Kubernetes cluster manager with a multi-tenant self-service portal.
#[derive(Debug, Parser)]
#[command(name = "kqueen", version, about)]
pub struct Cli {
    /// TOML configuration file; `KQUEEN_*` environment variables override it.
    #[arg(long, global = true, env = "KQUEEN_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the portal server until SIGINT or SIGTERM.
    Serve,
    /// Manage tenants.
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Manage local (break-glass) accounts.
    #[command(subcommand)]
    User(UserCommand),
    /// Manage the credential vault.
    #[command(subcommand)]
    Vault(VaultCommand),
    /// The portal's API from a terminal (after `kqueen login`).
    #[command(flatten)]
    Client(kqueen_cli::ClientCommand),
}

#[derive(Debug, Subcommand)]
pub enum VaultCommand {
    /// Re-encrypt every secret under the current (first) key of KQUEEN_VAULT_KEYS. Put a new
    /// key first, keep the old ones after it, run this, then remove the old keys.
    Rotate,
}

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Create a local account with a password. Without --password-stdin a random password is
    /// generated and printed once.
    Create {
        /// Username: letters, digits and . _ @ + -
        username: String,
        /// Make the account an operator (sees and controls all tenants).
        #[arg(long)]
        operator: bool,
        /// Read the password (one line, at least 12 characters) from standard input.
        #[arg(long)]
        password_stdin: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant (recorded in the audit log as done from the command line).
    Create {
        /// Identifier: a DNS-1123 label such as `team-a`.
        slug: String,
        /// Human-readable name; defaults to the slug.
        #[arg(long)]
        name: Option<String>,
    },
    /// List tenants, optionally only those whose slug or name contains TEXT.
    List {
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
    },
}

/// Parses the arguments, runs the command, and turns any failure into a message and exit code 1.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Client commands talk to a portal over HTTP: no server settings, database or log setup.
    let command = match cli.command {
        Command::Client(client) => return kqueen_cli::main(client),
        other => other,
    };
    let settings = match Settings::load(cli.config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: invalid configuration: {e}");
            return ExitCode::FAILURE;
        }
    };
    telemetry::init(settings.log_format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(command, settings));
    // A task that never ends (a worker thread hung in a library) must not keep a stopping
    // process alive: dropping the runtime would wait for it forever; this waits 10 s, well
    // inside Kubernetes' default 30 s grace period.
    runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command, settings: Settings) -> anyhow::Result<()> {
    match command {
        Command::Serve => serve(settings).await,
        Command::Tenant(cmd) => tenant(cmd, settings).await,
        Command::User(cmd) => user(cmd, settings).await,
        Command::Vault(VaultCommand::Rotate) => vault_rotate(settings).await,
        Command::Client(client) => {
            anyhow::bail!("{client:?} is a client command; it does not run here")
        }
    }
}

/// The domain services on the configured database, for one command.
async fn open(settings: &Settings) -> anyhow::Result<Kqueen> {
    crate::startup::open_kqueen(settings).await
}

#[allow(clippy::print_stdout)] // the count is this command's answer
async fn vault_rotate(settings: Settings) -> anyhow::Result<()> {
    let kqueen = open(&settings).await?;
    let n = kqueen.vault().rotate().await;
    kqueen.shutdown().await;
    println!("re-encrypted {} secret(s) under the current key", n?);
    Ok(())
}

fn cli_actor() -> Actor {
    Actor::cli(std::env::var("USER").ok().filter(|u| !u.is_empty()))
}

/// A random password for generated accounts (24 characters of base64url).
fn generated_password() -> String {
    kqueen_core::secret::random_secret("")
        .chars()
        .take(24)
        .collect()
}

#[allow(clippy::print_stdout)] // printing the generated password is this command's job
async fn user(cmd: UserCommand, settings: Settings) -> anyhow::Result<()> {
    let kqueen = open(&settings).await?;
    let UserCommand::Create {
        username,
        operator,
        password_stdin,
    } = cmd;
    let (password, generated) = if password_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        (line.trim_end_matches(['\r', '\n']).to_owned(), false)
    } else {
        (generated_password(), true)
    };
    let result = kqueen
        .auth()
        .create_local_user(&cli_actor(), &username, &password, operator)
        .await;
    kqueen.shutdown().await;
    let user = result?;
    let kind = if user.is_operator { "operator" } else { "user" };
    println!("created local {kind} {}", user.username);
    if generated {
        println!("password: {password}");
    }
    Ok(())
}

/// At first start with local accounts enabled and no operator yet, creates `admin` with a
/// one-time password printed on standard error (never into the structured log).
async fn bootstrap(state: &startup::AppState, settings: &Settings) -> anyhow::Result<()> {
    if !settings.local_accounts || !state.kqueen.auth().needs_bootstrap().await? {
        return Ok(());
    }
    let password = generated_password();
    match state
        .kqueen
        .auth()
        .create_local_user(&Actor::system(), "admin", &password, true)
        .await
    {
        Ok(_) => {
            eprintln!(
                "\n  KQueen first start: created the break-glass operator account\n    \
                 user:     admin\n    password: {password}\n  It is shown only now. Disable \
                 local accounts with KQUEEN_LOCAL_ACCOUNTS=false once single sign-on works.\n"
            );
            Ok(())
        }
        // An `admin` exists but is no operator: leave it, an operator can be created with
        // `kqueen user create --operator`.
        Err(kqueen_core::Error::Conflict(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn serve(mut settings: Settings) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(settings.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", settings.listen))?;
    // The address actually bound (port 0 picks one): the default public URL derives from it.
    settings.listen = listener.local_addr()?;
    let state = startup::build_state(&settings).await?;
    bootstrap(&state, &settings).await?;
    let engine = startup::engine_config(&settings);
    startup::run(listener, state, engine, startup::shutdown_signal()).await?;
    Ok(())
}

#[allow(clippy::print_stdout)] // printing results is this command's job
async fn tenant(cmd: TenantCommand, settings: Settings) -> anyhow::Result<()> {
    let kqueen = open(&settings).await?;
    let actor = cli_actor();
    let result = match cmd {
        TenantCommand::Create { slug, name } => {
            let t = kqueen
                .tenancy()
                .create_tenant(
                    &actor,
                    NewTenant {
                        slug,
                        display_name: name,
                    },
                )
                .await;
            t.map(|t| println!("created tenant {} ({})", t.slug, t.display_name.as_str()))
        }
        TenantCommand::List { filter } => {
            let filter = TenantFilter::from_query(filter.as_deref());
            let page = Page::first(Page::MAX_LIMIT);
            kqueen
                .tenancy()
                .list_tenants(&actor, &filter, page)
                .await
                .map(|list| {
                    for t in list {
                        println!(
                            "{}\t{}\t{}",
                            t.slug,
                            t.display_name.as_str(),
                            t.created_at.to_rfc3339()
                        );
                    }
                })
        }
    };
    kqueen.shutdown().await;
    Ok(result?)
}
