//! Structured logs with `tracing`. Levels come from `RUST_LOG` (default: info for KQueen,
//! warnings for libraries).

use tracing_subscriber::{fmt, EnvFilter};

use crate::settings::LogFormat;

/// kube's client logs every failed request at ERROR before KQueen reports it with the cluster
/// it concerns: an unreachable cluster would fill the log twice at every inventory turn.
const DEFAULT_FILTER: &str = "info,sqlx=warn,tower_http=info,kube_client::client::builder=off";

/// Installs the global subscriber; later calls are ignored (tests start several servers).
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours only on a terminal, so that piped logs stay plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none();
    let builder = fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
