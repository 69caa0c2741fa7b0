//! The use cases of the portal. Every one takes the acting identity and checks the policy
//! ([`crate::policy`]) itself; web layers call exactly one of these per request and never
//! touch the store directly. Every refusal is recorded in the audit trail.

mod access;
mod access_sweep;
mod audit;
mod auth;
mod clusters;
mod engine_hooks;
mod identity_cache;
mod inventory;
mod members;
mod providers;
mod quotas;
mod templates;
mod tenants;
mod tokens;

use std::sync::Arc;

use crate::audit::{AuditEvent, Outcome};
use crate::deps::Deps;
use crate::identity::GroupMap;
use crate::policy::{self, Permission};
use crate::provisioner::Registry;
use crate::store::{Backend, Counts, Store};
use crate::vault::Vault;
use crate::{Actor, Error, Result};

pub use crate::deps::ClusterSettings;
pub use crate::inventory::fleet::ImageRow;
pub use access::KubeconfigDownload;
pub use auth::ExternalLogin;
pub use clusters::ClusterDetail;
pub use inventory::{Attention, ClusterSync, FleetOverview, FleetTotals, InventorySettings, Tally};
pub use providers::KindInfo;
pub use templates::TemplateView;

/// Figures for the overview page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// Installation-wide counts: operators only.
    pub counts: Option<Counts>,
    pub backend: Backend,
}

/// KQueen's domain services over one [`Store`]. Cheap to clone.
#[derive(Clone)]
pub struct Kqueen {
    /// The handles every area shares (and the engine).
    pub(crate) deps: Deps,
    group_map: Arc<GroupMap>,
    pub(crate) inventory: Arc<InventorySettings>,
    pub(crate) identities: Arc<identity_cache::IdentityCache>,
    pub(crate) tokens: Arc<identity_cache::TokenCache>,
    /// At most one background pass revoking stale cluster access at a time.
    pub(crate) access_sweep: Arc<SweepGate>,
}

/// Single flight for a background pass: requests that arrive while one runs ask for one more
/// pass after it (never several at once, never one lost).
#[derive(Debug, Default)]
pub(crate) struct SweepGate {
    running: std::sync::atomic::AtomicBool,
    again: std::sync::atomic::AtomicBool,
}

impl SweepGate {
    /// Runs `pass` on `runtime` now, or once more after the pass that is running.
    pub(crate) fn request<F, Fut>(self: &Arc<Self>, runtime: &tokio::runtime::Handle, pass: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send,
    {
        use std::sync::atomic::Ordering::SeqCst;
        self.again.store(true, SeqCst);
        if self.running.swap(true, SeqCst) {
            return;
        }
        let gate = self.clone();
        runtime.spawn(async move {
            loop {
                gate.again.store(false, SeqCst);
                pass().await;
                gate.running.store(false, SeqCst);
                // Asked meanwhile, and nobody else took over: one more pass.
                if !gate.again.load(SeqCst) || gate.running.swap(true, SeqCst) {
                    break;
                }
            }
        });
    }
}

impl Kqueen {
    /// Services over `store`, with the built-in provisioners and a vault on the same database
    /// under a key that lives only as long as this process. Servers call
    /// [`Kqueen::with_vault`] with the configured key; the default suits tests.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            deps: Deps::new(store),
            group_map: Arc::new(GroupMap::default()),
            inventory: Arc::new(InventorySettings::default()),
            identities: Arc::new(identity_cache::IdentityCache::new(
                identity_cache::IdentityCache::DEFAULT_TTL,
            )),
            tokens: Arc::new(identity_cache::TokenCache::new(
                identity_cache::TokenCache::DEFAULT_TTL,
            )),
            access_sweep: Arc::default(),
        }
    }

    /// How long a resolved identity or API token may be reused by this process (default 2 s;
    /// zero: never). Changes made through this process are seen at once; another process's
    /// within `ttl`.
    pub fn with_identity_cache_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.identities = Arc::new(identity_cache::IdentityCache::new(ttl));
        self.tokens = Arc::new(identity_cache::TokenCache::new(ttl));
        self
    }

    /// Uses `vault` for kubeconfigs and provider credentials.
    pub fn with_vault(mut self, vault: Vault) -> Self {
        self.deps.vault = vault;
        self
    }

    /// Uses these provisioners.
    pub fn with_registry(mut self, registry: Registry) -> Self {
        self.deps.registry = Arc::new(registry);
        self
    }

    pub fn with_cluster_settings(mut self, settings: ClusterSettings) -> Self {
        self.deps.settings = Arc::new(settings);
        self
    }

    pub fn vault(&self) -> &Vault {
        &self.deps.vault
    }

    pub fn registry(&self) -> &Registry {
        &self.deps.registry
    }

    /// The operation engine over this installation's handles, with `config`.
    pub fn engine(&self, config: crate::engine::EngineConfig) -> crate::engine::Engine {
        crate::engine::Engine::new(self.deps.clone(), Arc::new(self.clone()), config)
    }

    /// Sets how identity-provider groups map to tenants and roles at login.
    pub fn with_group_map(mut self, map: GroupMap) -> Self {
        self.group_map = Arc::new(map);
        self
    }

    /// The store, for adapters that keep web-layer state in it (sessions).
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.deps.store
    }

    /// Succeeds when the database is reachable (readiness).
    pub async fn ready(&self) -> Result<()> {
        self.deps.store.ping().await
    }

    /// Closes the database connections; call once at shutdown.
    pub async fn shutdown(&self) {
        self.deps.store.close().await;
    }

    pub async fn overview(&self, actor: &Actor) -> Result<Overview> {
        if actor.identity().is_none() && !actor.is_trusted() {
            return Err(Error::Unauthenticated);
        }
        let counts = match policy::check(actor, Permission::ListAllTenants) {
            Ok(()) => Some(self.deps.store.counts().await?),
            Err(_) => None,
        };
        Ok(Overview {
            counts,
            backend: self.deps.store.backend(),
        })
    }

    /// Checks `permission`; a refusal is audited as `action` on `target` and returned.
    async fn authorize(
        &self,
        actor: &Actor,
        permission: Permission,
        action: &str,
        target: &str,
        tenant: Option<uuid::Uuid>,
    ) -> Result<()> {
        match policy::check(actor, permission) {
            Ok(()) => Ok(()),
            Err(e) => {
                self.audit_refusal(actor, action, target, tenant, &e)
                    .await?;
                Err(e)
            }
        }
    }

    /// Passes `result` through, auditing a client error (invalid input, conflict, not found)
    /// as a failed `action` on `target`.
    async fn audited<T>(
        &self,
        actor: &Actor,
        action: &str,
        target: &str,
        tenant: Option<uuid::Uuid>,
        result: Result<T>,
    ) -> Result<T> {
        if let Err(e) = &result {
            if e.is_client_error() {
                self.audit_refusal(actor, action, target, tenant, e).await?;
            }
        }
        result
    }

    /// Records a refused or failed attempt.
    async fn audit_refusal(
        &self,
        actor: &Actor,
        action: &str,
        target: &str,
        tenant: Option<uuid::Uuid>,
        error: &Error,
    ) -> Result<()> {
        let outcome = match error {
            Error::Forbidden | Error::Unauthenticated | Error::NotFound(_) => Outcome::Denied,
            _ => Outcome::Failure,
        };
        let target: String = target.chars().take(100).collect();
        let mut event =
            AuditEvent::now(actor, action, target, outcome).with_detail(error.to_string());
        event.tenant_id = tenant;
        self.deps.store.record_audit(&event).await
    }
}

#[cfg(test)]
mod sweep_gate_tests {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    use std::sync::Arc;

    use super::SweepGate;

    #[tokio::test]
    async fn one_pass_at_a_time_and_one_more_for_requests_meanwhile() {
        let gate = Arc::new(SweepGate::default());
        let (passes, busy, overlap) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let release = Arc::new(tokio::sync::Semaphore::new(0));
        let pass = {
            let (passes, busy, overlap, release) = (
                passes.clone(),
                busy.clone(),
                overlap.clone(),
                release.clone(),
            );
            move || {
                let (passes, busy, overlap, release) = (
                    passes.clone(),
                    busy.clone(),
                    overlap.clone(),
                    release.clone(),
                );
                async move {
                    if busy.fetch_add(1, SeqCst) > 0 {
                        overlap.fetch_add(1, SeqCst);
                    }
                    passes.fetch_add(1, SeqCst);
                    release.acquire().await.expect("open").forget();
                    busy.fetch_sub(1, SeqCst);
                }
            }
        };
        let runtime = tokio::runtime::Handle::current();
        gate.request(&runtime, pass.clone());
        while passes.load(SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        // Ten requests while the first pass runs: one more pass, not ten.
        for _ in 0..10 {
            gate.request(&runtime, pass.clone());
        }
        release.add_permits(1);
        while passes.load(SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
        release.add_permits(1);
        while gate.running.load(SeqCst) {
            tokio::task::yield_now().await;
        }
        assert_eq!(passes.load(SeqCst), 2);
        assert_eq!(overlap.load(SeqCst), 0, "never two passes at once");
        // Idle again: the next request runs at once.
        release.add_permits(1);
        gate.request(&runtime, pass);
        while passes.load(SeqCst) < 3 {
            tokio::task::yield_now().await;
        }
    }
}
