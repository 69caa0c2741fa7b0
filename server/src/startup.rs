//! Builds the application state and serves the router (`routes.rs`) until shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Context};
use kqueen_app::OUTPUT_NAME;
use kqueen_core::engine::EngineConfig;
use kqueen_core::identity::GroupMap;
use kqueen_core::periodic::{Job, JobLeases};
use kqueen_core::store::Store;
use kqueen_core::vault::{EtcdBackend, Keyring, SecretBackend, Vault};
use kqueen_core::{store, ClusterSettings, Kqueen};
use leptos::config::{Env, LeptosOptions};
use secrecy::ExposeSecret;
use tokio::net::TcpListener;

use crate::auth::oidc::{Oidc, OidcConfig};
use crate::auth::{AuthConfig, AuthState};
use crate::routes::router;
use crate::settings::Settings;
pub use crate::state::{AppState, SharedState};

/// Opens (and migrates) the database and the credential vault: KQueen's domain services as
/// configured (also used by the command line).
pub async fn open_kqueen(settings: &Settings) -> anyhow::Result<Kqueen> {
    let store = Arc::new(
        store::connect(settings.database_url().expose_secret())
            .await
            .context("cannot open the database")?,
    );
    tracing::info!(backend = store.backend().as_str(), "database ready");
    let keyring = match &settings.vault_keys {
        Some(keys) if !keys.expose_secret().trim().is_empty() => {
            Keyring::parse(keys.expose_secret()).context("KQUEEN_VAULT_KEYS")?
        }
        _ => {
            let path = settings.data_dir.join("vault.keys");
            Keyring::load_or_create(&path)
                .with_context(|| format!("vault key file {}", path.display()))?
        }
    };
    let backend: Arc<dyn SecretBackend> = match settings.vault_backend.trim() {
        "sql" | "" => store.clone(),
        "etcd" => {
            let endpoints: Vec<String> = settings
                .vault_etcd_endpoints
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(str::to_owned)
                .collect();
            if endpoints.is_empty() {
                bail!("KQUEEN_VAULT_BACKEND=etcd needs KQUEEN_VAULT_ETCD_ENDPOINTS");
            }
            let credentials = match (&settings.vault_etcd_username, &settings.vault_etcd_password) {
                (Some(u), Some(p)) => Some((u.clone(), p.expose_secret().to_owned())),
                (None, None) => None,
                _ => bail!("etcd credentials need both KQUEEN_VAULT_ETCD_USERNAME and KQUEEN_VAULT_ETCD_PASSWORD"),
            };
            let etcd = EtcdBackend::connect(&endpoints, &settings.vault_etcd_prefix, credentials)
                .await
                .context("cannot connect to the vault's etcd")?;
            tracing::info!(endpoints = ?endpoints, "vault secrets stored in etcd");
            Arc::new(etcd)
        }
        other => bail!("KQUEEN_VAULT_BACKEND must be sql or etcd, not '{other}'"),
    };
    let group_map = GroupMap::parse(&settings.group_map).context("KQUEEN_GROUP_MAP")?;
    let archives = settings.archives().map_err(anyhow::Error::msg)?;
    tracing::info!(archives = ?archives, "backup archives kept");
    let cluster_settings = ClusterSettings {
        user_token_ttl: std::time::Duration::from_secs(
            u64::from(settings.user_kubeconfig_ttl_hours.clamp(1, 24 * 30)) * 3600,
        ),
        work_dir: settings.data_dir.join("work"),
        archives,
        ..ClusterSettings::default()
    };
    let inventory = settings.inventory().map_err(anyhow::Error::msg)?;
    Ok(Kqueen::new(store)
        .with_group_map(group_map)
        .with_vault(Vault::new(keyring, backend))
        .with_cluster_settings(cluster_settings)
        .with_inventory_settings(inventory))
}

/// Opens the domain services and prepares the site options.
pub async fn build_state(settings: &Settings) -> anyhow::Result<AppState> {
    let kqueen = open_kqueen(settings).await?;

    let site_root = settings.site_root.to_string_lossy().into_owned();
    let bundle = settings
        .site_root
        .join("pkg")
        .join(format!("{OUTPUT_NAME}.js"));
    if !bundle.is_file() {
        tracing::warn!(
            site_root = %site_root,
            "built site not found: pages render on the server but will not hydrate; \
             build it with `make site` or point KQUEEN_SITE_ROOT at it"
        );
    }
    let leptos_options = LeptosOptions::builder()
        .output_name(OUTPUT_NAME)
        .site_root(site_root)
        .site_pkg_dir("pkg")
        .site_addr(settings.listen)
        .env(Env::PROD)
        .build();
    let public_url = settings.public_url();
    let auth = AuthConfig {
        public_url: public_url.clone(),
        public_url_configured: settings.configured_public_url().is_some(),
        local_accounts: settings.local_accounts,
        session_idle_minutes: settings.session_idle_minutes.max(1),
        session_absolute_hours: settings.session_absolute_hours.max(1),
    };
    let oidc = oidc_from(settings, &public_url)?;
    if oidc.is_none() && !settings.local_accounts {
        tracing::warn!("neither single sign-on nor local accounts are enabled: nobody can log in");
    }
    let page_slots = settings.page_slots(kqueen.store().backend());
    Ok(AppState::new(SharedState {
        leptos_options,
        auth: AuthState::new(kqueen.clone(), auth, oidc),
        kqueen,
        inventory_every: (settings.inventory_interval_seconds > 0)
            .then(|| std::time::Duration::from_secs(settings.inventory_interval_seconds.max(10))),
        http_metrics: crate::metrics::HttpMetrics::default(),
        page_slots,
    }))
}

fn oidc_from(settings: &Settings, public_url: &str) -> anyhow::Result<Option<Arc<Oidc>>> {
    let set = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let secret = settings
        .oidc_client_secret
        .clone()
        .filter(|s| !s.expose_secret().trim().is_empty());
    match (
        set(&settings.oidc_issuer_url),
        set(&settings.oidc_client_id),
        secret,
    ) {
        (None, None, None) => Ok(None),
        (Some(issuer), Some(client_id), Some(client_secret)) => {
            let config = OidcConfig {
                issuer,
                client_id,
                client_secret,
                scopes: settings
                    .oidc_scopes
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect(),
                groups_claim: settings.oidc_groups_claim.clone(),
                userinfo: settings.oidc_userinfo,
                redirect_url: format!("{public_url}/auth/callback"),
            };
            tracing::info!(issuer = %config.issuer, "single sign-on enabled");
            Ok(Some(Arc::new(Oidc::new(config)?)))
        }
        _ => bail!(
            "single sign-on needs all of KQUEEN_OIDC_ISSUER_URL, KQUEEN_OIDC_CLIENT_ID and \
             KQUEEN_OIDC_CLIENT_SECRET"
        ),
    }
}

/// Serves on `listener` until `shutdown` completes, then finishes open requests and closes
/// the database.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    engine: Option<EngineConfig>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let addr = listener.local_addr()?;
    tracing::info!(address = %addr, "listening on http://{addr}");
    let kqueen = state.kqueen.clone();
    // Periodic work runs on one replica at a time (leases named after this replica, as its
    // operation leases are).
    let owner = engine
        .as_ref()
        .map_or_else(kqueen_core::replica::new_replica_id, |e| e.owner.clone());
    let leases = JobLeases::new(kqueen.store().clone(), owner);
    let purge = tokio::spawn(purge_sessions(kqueen.store().clone(), leases.clone()));
    let statistics = tokio::spawn(refresh_statistics(kqueen.store().clone(), leases.clone()));
    let (stop_engine, engine_stopped) = tokio::sync::watch::channel(false);
    // Inventory syncs run where operations run: a process with workers = 0 serves only.
    let inventory = state
        .inventory_every
        .filter(|_| engine.is_some())
        .map(|every| tokio::spawn(sync_inventory(kqueen.clone(), every, leases.clone())));
    let engine = engine.map(|config| tokio::spawn(kqueen.engine(config).run(engine_stopped)));
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    let result = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    let _ = stop_engine.send(true);
    if let Some(engine) = engine {
        let _ = engine.await;
    }
    // Stopped and ended before their leases are given up (a turn in flight must not take
    // one back afterwards).
    purge.abort();
    statistics.abort();
    let _ = purge.await;
    let _ = statistics.await;
    if let Some(inventory) = inventory {
        inventory.abort();
        let _ = inventory.await;
    }
    leases.release_all().await;
    kqueen.shutdown().await;
    tracing::info!("stopped");
    result
}

/// The operation engine of this process, as configured (`None` with `workers = 0`).
pub fn engine_config(settings: &Settings) -> Option<EngineConfig> {
    if settings.workers == 0 {
        return None;
    }
    let mut config = EngineConfig::new(settings.data_dir.join("work"));
    config.concurrency = settings.workers;
    config.lease = std::time::Duration::from_secs(settings.lease_seconds.clamp(3, 3600));
    config.rollout_interval =
        std::time::Duration::from_secs(settings.rollout_interval_seconds.clamp(1, 3600));
    config.autoscale_interval =
        std::time::Duration::from_secs(settings.autoscale_interval_seconds.clamp(1, 3600));
    Some(config)
}

/// Syncs the inventory of every Ready cluster now and then `every` (on the replica whose
/// turn it is).
async fn sync_inventory(kqueen: Kqueen, every: std::time::Duration, leases: JobLeases) {
    let mut timer = tokio::time::interval(every);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let started = std::time::Instant::now();
        let sync = leases.run(Job::InventorySync, every, kqueen.fleet().sync_inventory());
        match sync.await {
            None => {}
            Some(Ok(results)) => {
                let failed = results.iter().filter(|r| r.error.is_some()).count();
                tracing::info!(
                    clusters = results.len(),
                    failed,
                    seconds = started.elapsed().as_secs_f64(),
                    "inventory synced"
                );
            }
            Some(Err(e)) => tracing::warn!(error = %e, "inventory sync failed"),
        }
    }
}

/// Deletes expired sessions every 15 minutes (on the replica whose turn it is).
async fn purge_sessions(store: Arc<dyn Store>, leases: JobLeases) {
    let period = std::time::Duration::from_secs(15 * 60);
    let mut every = tokio::time::interval(period);
    loop {
        every.tick().await;
        let purge = store.sessions_purge_expired(chrono::Utc::now());
        if let Some(Err(e)) = leases.run(Job::SessionPurge, period, purge).await {
            tracing::warn!(error = %e, "cannot purge expired sessions");
        }
    }
}

/// Keeps the query planner's statistics fresh (every minute: tables changed a lot since
/// their last ANALYZE are analysed again, so a bulk import is followed within a minute).
async fn refresh_statistics(store: Arc<dyn Store>, leases: JobLeases) {
    let period = std::time::Duration::from_secs(60);
    let mut every = tokio::time::interval(period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match leases
            .run(Job::Statistics, period, store.refresh_statistics())
            .await
        {
            Some(Ok(tables)) if !tables.is_empty() => {
                tracing::info!(tables = %tables.join(","), "planner statistics refreshed");
            }
            Some(Err(e)) => tracing::warn!(error = %e, "cannot refresh planner statistics"),
            _ => {}
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutdown requested; finishing open requests");
}
