//! Typed configuration: built-in defaults, then an optional TOML file (`--config` or
//! `KQUEEN_CONFIG`), then `KQUEEN_*` environment variables. `kqueen.example.toml` at the
//! repository root documents every key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Format, Toml};
use figment::Figment;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

mod backup_store;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Everything the server can be told. `Debug` never shows secrets.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    /// Address the portal listens on (`KQUEEN_LISTEN`).
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Directory for KQueen's own files, such as the default SQLite database (`KQUEEN_DATA_DIR`).
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    /// Where backup archives are kept (`KQUEEN_BACKUP_DIR`); default `<data_dir>/backups`.
    /// Several replicas must share it (a ReadWriteMany volume): each serves the archives of
    /// backups any of them took.
    #[serde(default)]
    pub backup_dir: Option<PathBuf>,
    /// `dir` (default: archives in `backup_dir`) or `s3` (an S3-compatible bucket, the
    /// `backup_s3_*` settings) (`KQUEEN_BACKUP_STORE`).
    #[serde(default)]
    pub backup_store: Option<String>,
    /// The S3-compatible store's URL (`KQUEEN_BACKUP_S3_ENDPOINT`); none: AWS S3.
    #[serde(default)]
    pub backup_s3_endpoint: Option<String>,
    /// Its region (`KQUEEN_BACKUP_S3_REGION`); default `us-east-1`.
    #[serde(default)]
    pub backup_s3_region: Option<String>,
    /// The bucket (`KQUEEN_BACKUP_S3_BUCKET`), which must exist.
    #[serde(default)]
    pub backup_s3_bucket: Option<String>,
    /// Folders in the bucket the archives are kept under (`KQUEEN_BACKUP_S3_PREFIX`).
    #[serde(default)]
    pub backup_s3_prefix: Option<String>,
    /// Path-style addressing, `<endpoint>/<bucket>/<key>` (MinIO, Ceph):
    /// `KQUEEN_BACKUP_S3_PATH_STYLE`; default false (virtual-hosted, `<bucket>.<host>`).
    #[serde(default)]
    pub backup_s3_path_style: bool,
    /// Static credentials of the bucket (`KQUEEN_BACKUP_S3_ACCESS_KEY_ID`)…
    #[serde(default)]
    pub backup_s3_access_key_id: Option<String>,
    /// …and their secret (`KQUEEN_BACKUP_S3_SECRET_ACCESS_KEY`, rather than the configuration
    /// file). Never logged.
    #[serde(default)]
    pub backup_s3_secret_access_key: Option<SecretString>,
    /// `sqlite://…` or `postgres://…`; default: `sqlite://<data_dir>/kqueen.db`
    /// (`KQUEEN_DATABASE_URL`). May hold a password, hence secret.
    #[serde(default)]
    pub database_url: Option<SecretString>,
    /// Directory with the built site: `pkg/kqueen.js`, `pkg/kqueen_bg.wasm`, `pkg/kqueen.css`
    /// and the files of `public/` (`KQUEEN_SITE_ROOT`).
    #[serde(default = "default_site_root")]
    pub site_root: PathBuf,
    /// `text` or `json` (`KQUEEN_LOG_FORMAT`). Levels come from `RUST_LOG`.
    #[serde(default)]
    pub log_format: LogFormat,
    /// The portal's external base URL, e.g. `https://kqueen.example.com` (`KQUEEN_PUBLIC_URL`).
    /// The OIDC redirect URI is `<public_url>/auth/callback`; state-changing requests must come
    /// from this origin; cookies are `Secure` when it is https. Default: `http://<listen>`.
    #[serde(default)]
    pub public_url: Option<String>,
    /// Single sign-on; enabled when issuer, client id and secret are set.
    #[serde(default)]
    pub oidc_issuer_url: Option<String>,
    #[serde(default)]
    pub oidc_client_id: Option<String>,
    #[serde(default)]
    pub oidc_client_secret: Option<SecretString>,
    /// Space-separated scopes (`KQUEEN_OIDC_SCOPES`).
    #[serde(default = "default_scopes")]
    pub oidc_scopes: String,
    /// The claim (ID token or userinfo) that lists the user's groups (`KQUEEN_OIDC_GROUPS_CLAIM`).
    #[serde(default = "default_groups_claim")]
    pub oidc_groups_claim: String,
    /// Also ask the userinfo endpoint for claims (`KQUEEN_OIDC_USERINFO`).
    #[serde(default = "default_true")]
    pub oidc_userinfo: bool,
    /// Groups to tenants and roles (`KQUEEN_GROUP_MAP`), e.g.
    /// `team-a=team-a:member,team-a-leads=team-a:admin,kaas-admins=*:operator`.
    #[serde(default)]
    pub group_map: String,
    /// Break-glass local accounts with passwords (`KQUEEN_LOCAL_ACCOUNTS`). When enabled and
    /// no operator exists, the first start creates `admin` with a one-time password.
    #[serde(default = "default_true")]
    pub local_accounts: bool,
    /// A session ends after this many minutes without requests (`KQUEEN_SESSION_IDLE_MINUTES`).
    #[serde(default = "default_idle")]
    pub session_idle_minutes: u32,
    /// …and at the latest this many hours after login (`KQUEEN_SESSION_ABSOLUTE_HOURS`).
    #[serde(default = "default_absolute")]
    pub session_absolute_hours: u32,
    /// Vault keys `id:base64key,...`, the first one current (`KQUEEN_VAULT_KEYS`). Default: a
    /// key generated into `<data_dir>/vault.keys` (mode 0600) at the first start.
    #[serde(default)]
    pub vault_keys: Option<SecretString>,
    /// Where sealed secrets live: `sql` (the database, default) or `etcd`.
    #[serde(default = "default_vault_backend")]
    pub vault_backend: String,
    /// etcd endpoints, comma-separated (`KQUEEN_VAULT_ETCD_ENDPOINTS`).
    #[serde(default)]
    pub vault_etcd_endpoints: String,
    /// Key prefix in etcd; tenants' secrets live under `<prefix>/tenants/<id>/`.
    #[serde(default = "default_etcd_prefix")]
    pub vault_etcd_prefix: String,
    #[serde(default)]
    pub vault_etcd_username: Option<String>,
    #[serde(default)]
    pub vault_etcd_password: Option<SecretString>,
    /// Lifetime of the per-user kubeconfigs tenant members download (`KQUEEN_USER_KUBECONFIG_TTL_HOURS`).
    #[serde(default = "default_user_ttl")]
    pub user_kubeconfig_ttl_hours: u32,
    /// Operations this process executes at once; 0 runs no worker here (`KQUEEN_WORKERS`).
    #[serde(default = "default_workers")]
    pub workers: usize,
    /// How long a worker's claim on an operation lasts without renewal (`KQUEEN_LEASE_SECONDS`).
    #[serde(default = "default_lease")]
    pub lease_seconds: u64,
    /// Seconds between the turns that move upgrades in waves on
    /// (`KQUEEN_ROLLOUT_INTERVAL_SECONDS`).
    #[serde(default = "default_rollout_interval")]
    pub rollout_interval_seconds: u64,
    /// Seconds between the autoscaler's turns at each autoscaled cluster
    /// (`KQUEEN_AUTOSCALE_INTERVAL_SECONDS`).
    #[serde(default = "default_autoscale_interval")]
    pub autoscale_interval_seconds: u64,
    /// Seconds between inventory syncs of all Ready clusters; 0 turns the timer off
    /// (`KQUEEN_INVENTORY_INTERVAL_SECONDS`). Runs only where workers run (`KQUEEN_WORKERS`).
    #[serde(default = "default_inventory_interval")]
    pub inventory_interval_seconds: u64,
    /// Clusters synced at the same time (`KQUEEN_INVENTORY_CONCURRENCY`).
    #[serde(default = "default_inventory_concurrency")]
    pub inventory_concurrency: usize,
    /// Time allowed for one cluster's sync (`KQUEEN_INVENTORY_TIMEOUT_SECONDS`).
    #[serde(default = "default_inventory_timeout")]
    pub inventory_timeout_seconds: u64,
    /// A cluster not synced for this long needs attention (`KQUEEN_INVENTORY_STALE_MINUTES`).
    #[serde(default = "default_inventory_stale")]
    pub inventory_stale_minutes: u64,
    /// Seconds a fleet dashboard answer is reused by requests with the same scope, filter
    /// and page; 0 reads every answer afresh (`KQUEEN_FLEET_DASHBOARD_MAX_AGE_SECONDS`).
    /// Cluster writes (any replica) and this process's syncs show at once regardless.
    #[serde(default = "default_dashboard_max_age")]
    pub fleet_dashboard_max_age_seconds: u64,
    /// Portal pages this process renders at once; more wait for a slot in arrival order
    /// (`KQUEEN_PAGE_RENDERS`). Default: per CPU core, 4 on SQLite and 16 on PostgreSQL
    /// ([`crate::page_slots::slots_per_core`]). The API, server functions, downloads,
    /// health and metrics are not bounded by it.
    #[serde(default)]
    pub page_renders: Option<usize>,
    /// Allowed image sources, comma-separated (`KQUEEN_ALLOWED_REGISTRIES`): a registry
    /// (`registry.k8s.io`), a registry and path (`ghcr.io/acme`) or a suffix
    /// (`*.corp.example`). Empty: the registry check is off.
    #[serde(default)]
    pub allowed_registries: String,
    /// The oldest supported Kubernetes version, e.g. `1.31` (`KQUEEN_MIN_KUBERNETES_VERSION`).
    /// Default: two minor versions behind the newest offered by a template.
    #[serde(default)]
    pub min_kubernetes_version: Option<String>,
}

fn default_rollout_interval() -> u64 {
    10
}

fn default_autoscale_interval() -> u64 {
    30
}

fn default_inventory_interval() -> u64 {
    300
}

fn default_inventory_concurrency() -> usize {
    8
}

fn default_inventory_timeout() -> u64 {
    30
}

fn default_inventory_stale() -> u64 {
    30
}

fn default_dashboard_max_age() -> u64 {
    10
}

fn default_vault_backend() -> String {
    "sql".into()
}

fn default_etcd_prefix() -> String {
    "/kqueen".into()
}

fn default_user_ttl() -> u32 {
    8
}

fn default_workers() -> usize {
    4
}

fn default_lease() -> u64 {
    30
}

fn default_scopes() -> String {
    "openid profile email groups".into()
}

fn default_groups_claim() -> String {
    "groups".into()
}

fn default_true() -> bool {
    true
}

fn default_idle() -> u32 {
    8 * 60
}

fn default_absolute() -> u32 {
    24
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 3000))
}

fn default_data_dir() -> PathBuf {
    PathBuf::from("data")
}

fn default_site_root() -> PathBuf {
    PathBuf::from("target/site")
}

impl Settings {
    /// Built-in defaults only (no file, no environment).
    pub fn defaults() -> Self {
        Figment::new()
            .extract()
            .expect("the built-in defaults are valid")
    }

    /// The directory archives are kept in with `backup_store = "dir"`: `backup_dir`, else
    /// `<data_dir>/backups`.
    pub fn backup_dir(&self) -> PathBuf {
        self.backup_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("backups"))
    }

    /// Reads the layers. A named configuration file must exist.
    pub fn load(config_file: Option<&Path>) -> Result<Self, Box<figment::Error>> {
        let mut figment = Figment::new();
        if let Some(file) = config_file {
            if !file.is_file() {
                return Err(Box::new(figment::Error::from(format!(
                    "configuration file {} does not exist",
                    file.display()
                ))));
            }
            figment = figment.merge(Toml::file(file));
        }
        figment
            .merge(Env::prefixed("KQUEEN_").ignore(&["config", "url", "token", "client_config"]))
            .extract()
            .map_err(Box::new)
    }

    /// The configured external base URL without a trailing slash, if any.
    pub fn configured_public_url(&self) -> Option<String> {
        let url = self
            .public_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())?;
        Some(url.trim_end_matches('/').to_owned())
    }

    /// The external base URL without a trailing slash: the configured one, else
    /// `http://<listen>`.
    pub fn public_url(&self) -> String {
        self.configured_public_url()
            .unwrap_or_else(|| format!("http://{}", self.listen))
    }

    /// The bound on concurrent page renders: the configured one (at least 1), else the
    /// store's number per core.
    pub fn page_slots(&self, backend: kqueen_core::store::Backend) -> crate::page_slots::PageSlots {
        match self.page_renders {
            Some(n) => crate::page_slots::PageSlots::new(n.min(65_536)),
            None => crate::page_slots::PageSlots::per_core(backend),
        }
    }

    /// The inventory settings, validated.
    pub fn inventory(&self) -> Result<kqueen_core::InventorySettings, String> {
        use std::time::Duration;
        let min_kubernetes = match self.min_kubernetes_version.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(v) => Some(kqueen_core::inventory::minor_version(v).ok_or_else(|| {
                format!("KQUEEN_MIN_KUBERNETES_VERSION: '{v}' is not a version such as 1.31")
            })?),
        };
        Ok(kqueen_core::InventorySettings {
            concurrency: self.inventory_concurrency.clamp(1, 256),
            timeout: Duration::from_secs(self.inventory_timeout_seconds.clamp(1, 3600)),
            stale_after: Duration::from_secs(self.inventory_stale_minutes.max(1) * 60),
            allowed_registries: self
                .allowed_registries
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
                .collect(),
            min_kubernetes,
            dashboard_max_age: Duration::from_secs(self.fleet_dashboard_max_age_seconds.min(3600)),
        })
    }

    /// The database to use, defaulting to a SQLite file in the data directory.
    pub fn database_url(&self) -> SecretString {
        match &self.database_url {
            Some(url) if !url.expose_secret().trim().is_empty() => url.clone(),
            _ => {
                let path = self.data_dir.join("kqueen.db");
                SecretString::from(format!("sqlite://{}", path.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    // figment's Jail fixes the closures' error type.
    #![allow(clippy::unwrap_used, clippy::result_large_err)]
    use super::*;
    use figment::Jail;

    #[test]
    fn defaults_apply_without_file_or_environment() {
        Jail::expect_with(|_| {
            let s = Settings::load(None).map_err(|e| *e)?;
            assert_eq!(s.listen.to_string(), "127.0.0.1:3000");
            assert_eq!(s.data_dir, PathBuf::from("data"));
            assert_eq!(s.backup_dir(), PathBuf::from("data/backups"));
            assert_eq!(s.database_url().expose_secret(), "sqlite://data/kqueen.db");
            assert_eq!(s.log_format, LogFormat::Text);
            Ok(())
        });
    }

    #[test]
    fn environment_overrides_file() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "kqueen.toml",
                "listen = \"0.0.0.0:8080\"\ndata_dir = \"/var/lib/kqueen\"\nlog_format = \"json\"",
            )?;
            jail.set_env("KQUEEN_LISTEN", "127.0.0.1:4000");
            jail.set_env("KQUEEN_BACKUP_DIR", "/shared/backups");
            jail.set_env("KQUEEN_DATABASE_URL", "postgres://kq:hunter2@db/kqueen");
            let s = Settings::load(Some(Path::new("kqueen.toml"))).map_err(|e| *e)?;
            assert_eq!(s.listen.to_string(), "127.0.0.1:4000");
            assert_eq!(s.data_dir, PathBuf::from("/var/lib/kqueen"));
            assert_eq!(s.backup_dir(), PathBuf::from("/shared/backups"));
            assert_eq!(s.log_format, LogFormat::Json);
            assert_eq!(
                s.database_url().expose_secret(),
                "postgres://kq:hunter2@db/kqueen"
            );
            assert!(
                !format!("{s:?}").contains("hunter2"),
                "Debug must redact secrets"
            );
            Ok(())
        });
    }

    #[test]
    fn the_example_configuration_loads() {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kqueen.example.toml");
        Jail::expect_with(|_| {
            let s = Settings::load(Some(&example)).map_err(|e| *e)?;
            assert_eq!(s.oidc_scopes, "openid profile email groups");
            assert!(s.local_accounts && s.oidc_userinfo);
            assert_eq!(
                (s.session_idle_minutes, s.session_absolute_hours),
                (480, 24)
            );
            Ok(())
        });
    }

    #[test]
    fn inventory_settings_are_parsed_and_checked() {
        Jail::expect_with(|jail| {
            jail.set_env(
                "KQUEEN_ALLOWED_REGISTRIES",
                " registry.k8s.io, ghcr.io/acme ,",
            );
            jail.set_env("KQUEEN_MIN_KUBERNETES_VERSION", "v1.31");
            let s = Settings::load(None).map_err(|e| *e)?;
            let inv = s.inventory().unwrap();
            assert_eq!(inv.allowed_registries, ["registry.k8s.io", "ghcr.io/acme"]);
            assert_eq!(inv.min_kubernetes, Some((1, 31)));
            assert_eq!(s.inventory_interval_seconds, 300);
            jail.set_env("KQUEEN_MIN_KUBERNETES_VERSION", "latest");
            let s = Settings::load(None).map_err(|e| *e)?;
            assert!(s.inventory().unwrap_err().contains("latest"));
            Ok(())
        });
    }

    #[test]
    fn page_renders_is_bounded_and_defaults_by_store() {
        use kqueen_core::store::Backend;
        Jail::expect_with(|jail| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            let s = Settings::load(None).map_err(|e| *e)?;
            assert_eq!(s.page_slots(Backend::Sqlite).size(), 4 * cores);
            assert_eq!(s.page_slots(Backend::Postgres).size(), 16 * cores);
            for (set, size) in [("3", 3), ("0", 1), ("1000000", 65_536)] {
                jail.set_env("KQUEEN_PAGE_RENDERS", set);
                let s = Settings::load(None).map_err(|e| *e)?;
                for backend in [Backend::Sqlite, Backend::Postgres] {
                    let got = s.page_slots(backend).size();
                    assert_eq!(got, size, "KQUEEN_PAGE_RENDERS={set} on {backend:?}");
                }
            }
            jail.set_env("KQUEEN_PAGE_RENDERS", "many");
            let e = Settings::load(None).unwrap_err().to_string().to_lowercase();
            assert!(e.contains("page_renders"), "{e}");
            Ok(())
        });
    }

    #[test]
    fn bad_values_and_missing_files_are_clear_errors() {
        Jail::expect_with(|jail| {
            jail.set_env("KQUEEN_LISTEN", "not-an-address");
            let e = Settings::load(None).unwrap_err().to_string().to_lowercase();
            assert!(e.contains("listen") && e.contains("socket address"), "{e}");
            let e = Settings::load(Some(Path::new("missing.toml")))
                .unwrap_err()
                .to_string();
            assert!(e.contains("missing.toml"), "{e}");
            Ok(())
        });
    }
}
