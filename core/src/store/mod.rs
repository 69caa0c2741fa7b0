//! Persistence. [`Store`] is the only door to the database, made of capability-sized traits;
//! [`connect`] opens SQLite or Postgres from a URL and brings the schema up to date.
//!
//! State changes take the audit event that records them, and write both in one transaction:
//! a change is never stored without its audit entry, nor the reverse.

mod sql;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::audit::{AuditEvent, AuditQuery};
use crate::cluster::{
    Cluster, ClusterEvent, ClusterFilter, ClusterState, Operation, OperationKind, OperationState,
    Provider, Quota, Template, Usage,
};
use crate::identity::{Member, Membership, MembershipSource, Role};
use crate::inventory::fleet as inv;
use crate::page::Page;
use crate::tenant::{Tenant, TenantFilter, TenantSlug};
use crate::token::ApiToken;
use crate::user::User;
use crate::Result;

pub use sql::{connect, SqlStore};

/// Which SQL dialect a store speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// Row counts shown on the overview page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub tenants: u64,
    pub users: u64,
    pub audit_events: u64,
}

#[async_trait]
pub trait TenantStore: Send + Sync {
    async fn create_tenant(&self, tenant: &Tenant, audit: &AuditEvent) -> Result<()>;
    async fn tenant_by_slug(&self, slug: &TenantSlug) -> Result<Tenant>;
    /// Tenants by slug; with `member` only those that user belongs to.
    async fn list_tenants(
        &self,
        filter: &TenantFilter,
        member: Option<Uuid>,
        page: Page,
    ) -> Result<Vec<Tenant>>;
    /// The tenants with these ids, in no particular order; ids of no tenant are skipped.
    async fn tenants_by_ids(&self, ids: &[Uuid]) -> Result<Vec<Tenant>>;
}

#[async_trait]
pub trait UserStore: Send + Sync {
    async fn create_user(
        &self,
        user: &User,
        password_hash: Option<&str>,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn user_by_id(&self, id: Uuid) -> Result<User>;
    async fn user_by_subject(&self, subject: &str) -> Result<Option<User>>;
    async fn user_by_username(&self, username: &str) -> Result<Option<User>>;
    async fn password_hash(&self, user_id: Uuid) -> Result<Option<String>>;
    async fn list_users(&self, page: Page) -> Result<Vec<User>>;
    /// Whether any operator who is not disabled exists.
    async fn has_active_operator(&self) -> Result<bool>;
    /// Inserts or updates a user who logged in through the identity provider, replaces their
    /// provider-derived memberships, and records the login: one transaction.
    async fn upsert_external_login(
        &self,
        user: &User,
        memberships: &[(Uuid, Role)],
        audit: &AuditEvent,
    ) -> Result<()>;
    /// Records a successful local login.
    async fn record_login(
        &self,
        user_id: Uuid,
        at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<()>;
}

#[async_trait]
pub trait MembershipStore: Send + Sync {
    async fn memberships_of(&self, user_id: Uuid) -> Result<Vec<Membership>>;
    async fn members_of(&self, tenant_id: Uuid) -> Result<Vec<Member>>;
    async fn put_membership(
        &self,
        tenant_id: Uuid,
        user_id: Uuid,
        role: Role,
        source: MembershipSource,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// False when there was no such membership.
    async fn delete_membership(
        &self,
        tenant_id: Uuid,
        user_id: Uuid,
        audit: &AuditEvent,
    ) -> Result<bool>;
}

#[async_trait]
pub trait TokenStore: Send + Sync {
    async fn create_token(&self, token: &ApiToken, hash: &str, audit: &AuditEvent) -> Result<()>;
    async fn tokens_of(&self, user_id: Uuid) -> Result<Vec<ApiToken>>;
    async fn token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>>;
    /// False when the user has no such active token.
    async fn revoke_token(
        &self,
        user_id: Uuid,
        id: Uuid,
        at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<bool>;
    async fn touch_token(&self, id: Uuid, at: DateTime<Utc>) -> Result<()>;
}

/// Server-side session records (opaque data, owned by the web layer's session manager).
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The data and expiry of a session that has not expired at `now`.
    async fn session_load(
        &self,
        id: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<(String, DateTime<Utc>)>>;
    async fn session_save(&self, id: &str, data: &str, expires_at: DateTime<Utc>) -> Result<()>;
    async fn session_delete(&self, id: &str) -> Result<()>;
    async fn sessions_purge_expired(&self, now: DateTime<Utc>) -> Result<u64>;
}

#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Records an event that accompanies no state change (a refusal, a failed attempt, a logout).
    async fn record_audit(&self, event: &AuditEvent) -> Result<()>;
    /// Newest first.
    async fn list_audit(&self, query: &AuditQuery, page: Page) -> Result<Vec<AuditEvent>>;
}

/// Providers and templates (operators' catalogue).
#[async_trait]
pub trait CatalogStore: Send + Sync {
    async fn create_provider(&self, provider: &Provider, audit: &AuditEvent) -> Result<()>;
    async fn update_provider(&self, provider: &Provider, audit: &AuditEvent) -> Result<()>;
    /// False when there was none; `Conflict` while templates or live clusters use it.
    async fn delete_provider(&self, id: Uuid, audit: &AuditEvent) -> Result<bool>;
    async fn provider(&self, id: Uuid) -> Result<Provider>;
    async fn provider_by_name(&self, name: &str) -> Result<Option<Provider>>;
    async fn list_providers(&self, page: Page) -> Result<Vec<Provider>>;
    async fn create_template(&self, template: &Template, audit: &AuditEvent) -> Result<()>;
    async fn update_template(&self, template: &Template, audit: &AuditEvent) -> Result<()>;
    async fn delete_template(&self, id: Uuid, audit: &AuditEvent) -> Result<bool>;
    async fn template(&self, id: Uuid) -> Result<Template>;
    async fn template_by_name(&self, name: &str) -> Result<Option<Template>>;
    /// All templates, or (with `offered_to`) the enabled ones of enabled providers offered to
    /// that tenant.
    async fn list_templates(&self, offered_to: Option<Uuid>, page: Page) -> Result<Vec<Template>>;
}

/// A change to a cluster that finishes an operation.
#[derive(Debug, Clone, Default)]
pub struct ClusterChange {
    pub state: Option<ClusterState>,
    /// `Some(None)` clears the error.
    pub error: Option<Option<String>>,
    pub endpoint: Option<String>,
    pub provisioner_state: Option<serde_json::Value>,
    pub node_count: Option<u32>,
    pub parameters: Option<crate::provisioner::Params>,
    /// The cluster is gone: hide it (its name becomes free).
    pub deleted: bool,
}

/// Tenants' quotas and what they use.
#[async_trait]
pub trait QuotaStore: Send + Sync {
    async fn quota(&self, tenant_id: Uuid) -> Result<Quota>;
    async fn set_quota(&self, tenant_id: Uuid, quota: &Quota, audit: &AuditEvent) -> Result<()>;
    async fn usage(&self, tenant_id: Uuid) -> Result<Usage>;
}

/// A cluster's operations and events.
#[async_trait]
pub trait TimelineStore: Send + Sync {
    /// Adds entries that belong to no operation (a hosted control plane's process died).
    async fn append_events(&self, events: &[ClusterEvent]) -> Result<()>;
    /// Newest first.
    async fn operations_of(&self, cluster_id: Uuid, limit: u32) -> Result<Vec<Operation>>;
    async fn operation(&self, id: Uuid) -> Result<Operation>;
    /// Oldest first, at most `limit`, after the event `after` when given.
    async fn events_of(
        &self,
        cluster_id: Uuid,
        after: Option<Uuid>,
        limit: u32,
    ) -> Result<Vec<ClusterEvent>>;
}

/// What a cluster's page shows of its history.
#[derive(Debug, Clone, Default)]
pub struct ClusterHistory {
    /// Newest first.
    pub operations: Vec<Operation>,
    /// Oldest first.
    pub events: Vec<ClusterEvent>,
    /// The last shared-storage reading, when asked for and measured.
    pub shared_storage: Option<(crate::provisioner::SharedStorage, DateTime<Utc>)>,
}

/// A cluster's history as its page reads it, on one database connection: one hand-back to
/// the pool instead of one per table (sqlx tests every connection handed back: a round trip
/// to Postgres, or to SQLite's connection thread).
#[async_trait]
pub trait ClusterHistoryStore: Send + Sync {
    /// The newest `operations` operations, the newest `events` timeline entries and, when
    /// `storage`, the shared-storage reading of a cluster.
    async fn history_of(
        &self,
        cluster_id: Uuid,
        operations: u32,
        events: u32,
        storage: bool,
    ) -> Result<ClusterHistory>;
}

/// What clusters keep in storage shared between clusters (a hosted control plane's etcd key
/// space), as last measured.
#[async_trait]
pub trait SharedStorageStore: Send + Sync {
    async fn put_shared_storage(
        &self,
        cluster_id: Uuid,
        usage: &crate::provisioner::SharedStorage,
        at: DateTime<Utc>,
    ) -> Result<()>;
    async fn shared_storage(
        &self,
        cluster_id: Uuid,
    ) -> Result<Option<(crate::provisioner::SharedStorage, DateTime<Utc>)>>;
    /// Per tenant, its live clusters' last readings and its quota (tenants without any
    /// reading are left out), by tenant slug and cluster name.
    async fn tenant_storage(&self) -> Result<Vec<crate::cluster::storage_quota::TenantStorage>>;
    /// A cluster's write access to shared storage was switched: its stored reading says so,
    /// with the timeline entry and the audit entry, in one transaction.
    async fn record_storage_switch(
        &self,
        cluster_id: Uuid,
        writable: bool,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
}

/// Clusters.
#[async_trait]
pub trait ClusterStore: Send + Sync {
    /// Stores a new cluster with its create operation and first timeline entry, after checking
    /// the tenant's quota inside the same transaction (concurrent requests cannot both pass).
    async fn create_cluster(
        &self,
        cluster: &Cluster,
        operation: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// A live (not deleted) cluster.
    async fn cluster(&self, id: Uuid) -> Result<Cluster>;
    /// One page of live clusters, by tenant slug and name, and how many match in all;
    /// `tenants` restricts to those tenants.
    async fn list_clusters(
        &self,
        filter: &ClusterFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<Cluster>, u64)>;
    /// Queues an operation on a cluster and moves it to `state`. `Conflict` while another
    /// operation of that cluster is unfinished, and for a delete of a production cluster
    /// unless `approved` (it runs a request a second person approved): checked in the write,
    /// so a cluster marked production meanwhile is never deleted by one person or its
    /// time-to-live.
    async fn enqueue_operation(
        &self,
        operation: &Operation,
        state: ClusterState,
        event: &ClusterEvent,
        audit: &AuditEvent,
        approved: bool,
    ) -> Result<()>;
    /// Live clusters whose time-to-live ran out and that have no unfinished operation.
    async fn expired_clusters(&self, now: DateTime<Utc>, limit: u32) -> Result<Vec<Cluster>>;
}

/// A user's valid access to a cluster, as the access sweep binds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessGrant {
    pub cluster_id: Uuid,
    pub username: String,
    /// The tenant role the ServiceAccount was issued for (`member`, `admin`).
    pub role: String,
}

/// A user's ServiceAccount in a cluster that no longer matches their membership.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleAccess {
    pub cluster_id: Uuid,
    pub user_id: Uuid,
    pub username: String,
    /// The role the ServiceAccount is bound to.
    pub granted_role: String,
    /// The user's role in the cluster's tenant now; None: not a member.
    pub current_role: Option<String>,
    pub disabled: bool,
}

/// The workers' side of operations: claims with a lease, fenced writes.
#[async_trait]
pub trait OperationStore: Send + Sync {
    /// Claims the oldest runnable operation (pending or running with an expired lease, due
    /// at `now`) for `owner` until `lease_until`, counting an attempt. Two workers never get
    /// the same operation while a lease is valid (Postgres: `FOR UPDATE SKIP LOCKED`).
    async fn claim_operation(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_until: DateTime<Utc>,
    ) -> Result<Option<Operation>>;
    /// Extends the lease; false when `owner` no longer holds it.
    async fn renew_lease(&self, id: Uuid, owner: &str, lease_until: DateTime<Utc>) -> Result<bool>;
    /// Records progress and timeline entries while `owner` holds the lease.
    async fn save_progress(
        &self,
        id: Uuid,
        owner: &str,
        step: &str,
        progress: u8,
        checkpoint: &serde_json::Value,
        events: &[ClusterEvent],
    ) -> Result<bool>;
    /// Releases the lease and makes the operation runnable again at `run_after`.
    async fn reschedule(
        &self,
        id: Uuid,
        owner: &str,
        run_after: DateTime<Utc>,
        checkpoint: &serde_json::Value,
        events: &[ClusterEvent],
    ) -> Result<bool>;
    /// Ends the operation (`Succeeded` or `Failed` with `error`) and applies `change` to its
    /// cluster, in one transaction, while `owner` holds the lease.
    #[allow(clippy::too_many_arguments)]
    async fn finish_operation(
        &self,
        id: Uuid,
        owner: &str,
        state: OperationState,
        error: Option<&str>,
        change: &ClusterChange,
        events: &[ClusterEvent],
        now: DateTime<Utc>,
    ) -> Result<bool>;
    /// Unfinished operations (for the operators' view and tests).
    async fn unfinished_operations(&self, limit: u32) -> Result<Vec<Operation>>;
    /// How many operations there are of each kind in each state (`/metrics`).
    async fn operation_counts(&self) -> Result<Vec<(OperationKind, OperationState, u64)>>;
}

/// The fleet inventory: rows replaced by each sync, and one cluster's inventory.
#[async_trait]
pub trait InventoryStore: Send + Sync {
    /// Every live cluster in state Ready (what a sync visits).
    async fn ready_clusters(&self) -> Result<Vec<Cluster>>;
    /// Replaces the cluster's inventory and findings, updates its image history and records
    /// a successful sync at `at`: one transaction.
    async fn save_inventory(
        &self,
        cluster_id: Uuid,
        snapshot: &crate::inventory::Snapshot,
        findings: &[crate::inventory::checks::Finding],
        at: DateTime<Utc>,
        duration_ms: u64,
    ) -> Result<()>;
    /// Records a failed sync; the rows of the last good one stay (and show their age).
    async fn save_sync_failure(
        &self,
        cluster_id: Uuid,
        error: &str,
        at: DateTime<Utc>,
        duration_ms: u64,
    ) -> Result<()>;
    async fn cluster_inventory(&self, cluster_id: Uuid) -> Result<inv::ClusterInventory>;
}

/// The fleet's live clusters with their sync status and node figures: the dashboard's
/// counts and totals computed in the database, its pages, and every cluster (metrics).
/// `tenants` restricts every query to those tenants' clusters (None: all).
#[async_trait]
pub trait FleetClusterStore: Send + Sync {
    /// A number that changes with every committed write to clusters, tenants, memberships
    /// and the catalog, by any process on this database: what is read after it is current
    /// for as long as it is unchanged.
    async fn clusters_version(&self) -> Result<i64>;
    /// Every cluster of the filter, by tenant and name.
    async fn fleet_clusters(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<inv::FleetCluster>>;
    /// The clusters counted by state, provider and reported API version, each group with how
    /// many of it need attention by `rule` (whose `behind` this ignores: the caller knows
    /// which groups' versions are behind).
    async fn fleet_groups(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
        rule: &inv::AttentionRule,
    ) -> Result<Vec<inv::FleetGroup>>;
    /// The node figures of the clusters, summed.
    async fn fleet_node_totals(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<inv::NodeTotals>;
    /// A page of the clusters by tenant and name; with a rule, only those needing attention.
    async fn fleet_page(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
        attention: Option<&inv::AttentionRule>,
        page: Page,
    ) -> Result<Vec<inv::FleetCluster>>;
}

/// The fleet queries over the inventory rows. `tenants` restricts every query to those
/// tenants' clusters (None: all).
#[async_trait]
pub trait FleetStore: Send + Sync {
    /// Images running now, by reference, with the total count.
    async fn list_images(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<inv::ImageSummary>, u64)>;
    /// Where these images run.
    async fn image_usages(
        &self,
        images: &[String],
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<inv::ImageUsage>>;
    /// The image history (present and gone images) per cluster, with the total count.
    async fn list_image_history(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<inv::ImageHistoryRow>, u64)>;
    async fn list_versions(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<inv::VersionRow>, u64)>;
    /// Most severe first.
    async fn list_findings(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
        page: Page,
    ) -> Result<(Vec<inv::FindingRow>, u64)>;
    async fn count_findings(
        &self,
        filter: &inv::FleetFilter,
        tenants: Option<&[Uuid]>,
    ) -> Result<Vec<inv::FindingCount>>;
}

/// Who holds a KQueen-issued ServiceAccount in which cluster (the per-user access records).
#[async_trait]
pub trait AccessStore: Send + Sync {
    async fn put_access(
        &self,
        cluster_id: Uuid,
        user_id: Uuid,
        service_account: &str,
        role: &str,
        expires_at: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// The ServiceAccount recorded for a user in a cluster.
    async fn access_of(&self, cluster_id: Uuid, user_id: Uuid) -> Result<Option<String>>;
    async fn delete_access(
        &self,
        cluster_id: Uuid,
        user_id: Uuid,
        audit: &AuditEvent,
    ) -> Result<bool>;
    /// Usernames of the users with a recorded ServiceAccount in a cluster.
    async fn accesses_of(&self, cluster_id: Uuid) -> Result<Vec<String>>;
    /// ServiceAccounts recorded in live Ready or Updating clusters whose user left the
    /// cluster's tenant, has another role there now, or was disabled; at most `limit`, by
    /// cluster.
    async fn stale_accesses(&self, limit: u32) -> Result<Vec<StaleAccess>>;
    /// Whether `access` is still stale as it was read: same role recorded (a download since
    /// then records the user's current role), and still not matching the membership.
    async fn still_stale(&self, access: &StaleAccess) -> Result<bool>;
    /// Deletes the record of `access` if it still holds the role it was read with.
    async fn delete_stale_access(&self, access: &StaleAccess, audit: &AuditEvent) -> Result<bool>;
    /// The recorded accesses in live Ready or Updating clusters that still match their
    /// user's membership (the stale ones are [`Self::stale_accesses`]), ordered by cluster
    /// and username; at most `limit`.
    async fn access_grants(&self, limit: u32) -> Result<Vec<AccessGrant>>;
}

/// Local accounts created in the portal, their invitations, and the operators' user list.
#[async_trait]
pub trait PeopleStore: Send + Sync {
    /// Stores a local account without a password and its first invitation: one transaction.
    async fn create_invited_user(
        &self,
        user: &User,
        invite: &crate::invite::Invite,
        token_hash: &str,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// Stores a new invitation for an existing user; their earlier unused ones stop working.
    async fn replace_invite(
        &self,
        invite: &crate::invite::Invite,
        token_hash: &str,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn invite_by_hash(&self, token_hash: &str) -> Result<Option<crate::invite::Invite>>;
    /// Uses the invitation and sets the password, if the invitation is still open at `now`:
    /// one transaction (false, and nothing written, when it is not).
    async fn accept_invite(
        &self,
        invite_id: Uuid,
        password_hash: &str,
        now: DateTime<Utc>,
        audit: &AuditEvent,
    ) -> Result<bool>;
    /// Every user with their tenants and open invitation, by username; at most `limit`.
    async fn user_directory(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<crate::invite::UserSummary>>;
    /// Gives the account added by `username` before its first login (subject
    /// `pending:<username>`) the identity provider's `subject`; false when there is none.
    async fn claim_pending_user(&self, username: &str, subject: &str) -> Result<bool>;
    async fn setup_counts(&self) -> Result<crate::invite::SetupCounts>;
}

/// Applications deployed into clusters. Deploys and deletes are queued as operations in the
/// same transaction that marks the version, with their timeline entry and audit event.
#[async_trait]
pub trait ApplicationStore: Send + Sync {
    /// Records a deploy of `app` (a new version, or a re-deploy of the one with the same
    /// cluster, name and version) and queues `op`. Conflict when the cluster is not Ready,
    /// when the version is being deployed or deleted already, or when another version uses
    /// its namespace. Returns the stored version (its id is the existing one on re-deploy).
    async fn queue_app_deploy(
        &self,
        app: &crate::workloads::application::Application,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<crate::workloads::application::Application>;
    /// Marks the version for deletion and queues `op`; Conflict while it is busy.
    async fn queue_app_delete(
        &self,
        app_id: Uuid,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn application(&self, id: Uuid) -> Result<crate::workloads::application::Application>;
    /// The live versions of a cluster, by name and version.
    async fn applications_of(
        &self,
        cluster_id: Uuid,
    ) -> Result<Vec<crate::workloads::application::Application>>;
    /// Ends a deploy: Deployed with what it applied, or Failed with why (the objects it
    /// applied before failing are kept, so that a later delete finds them).
    async fn finish_app_deploy(
        &self,
        id: Uuid,
        result: std::result::Result<&[crate::workloads::refs::ObjectRef], &str>,
        now: DateTime<Utc>,
    ) -> Result<()>;
    /// Ends a delete: the version is gone (Ok) or Failed with why.
    async fn finish_app_delete(
        &self,
        id: Uuid,
        result: std::result::Result<(), &str>,
        now: DateTime<Utc>,
    ) -> Result<()>;
}

/// Backups of clusters. Taking one is queued as an operation in the same transaction that
/// records it, with its timeline entry and audit event.
#[async_trait]
pub trait BackupStore: Send + Sync {
    /// Records `backup` (running) and queues `op`. Conflict when the cluster is not Ready or a
    /// backup of it is being taken already.
    async fn queue_backup(
        &self,
        backup: &crate::backup::Backup,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn backup(&self, id: Uuid) -> Result<crate::backup::Backup>;
    /// A cluster's backups, newest first.
    async fn backups_of(&self, cluster_id: Uuid) -> Result<Vec<crate::backup::Backup>>;
    /// Ends a backup: Succeeded with what it holds and its archive's size, or Failed with why.
    async fn finish_backup(
        &self,
        id: Uuid,
        result: std::result::Result<(&crate::backup::BackupSummary, u64), &str>,
        now: DateTime<Utc>,
    ) -> Result<()>;
    /// Records `restore` (running) and queues `op` on the cluster restored into. Conflict when
    /// that cluster is not Ready or a restore into it is running.
    async fn queue_restore(
        &self,
        restore: &crate::backup::Restore,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn restore(&self, id: Uuid) -> Result<crate::backup::Restore>;
    /// Forgets a backup and its finished restores, with its audit event (its archive and
    /// sealed Secrets are the caller's to remove). NotFound when there is no such backup,
    /// Conflict while it is being taken or restored.
    async fn remove_backup(&self, id: Uuid, audit: &AuditEvent) -> Result<()>;
    /// Backups of the tenants `tenants` (None: every tenant), of live and deleted clusters,
    /// newest first, at most `limit`.
    async fn backups_in(
        &self,
        tenants: Option<&[Uuid]>,
        limit: u32,
    ) -> Result<Vec<crate::backup::ListedBackup>>;
    /// Sets a cluster's schedule (creates or replaces it), with its audit event.
    async fn put_backup_schedule(
        &self,
        schedule: &crate::backup::schedule::BackupSchedule,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// Removes a cluster's schedule; false when it had none.
    async fn remove_backup_schedule(&self, cluster_id: Uuid, audit: &AuditEvent) -> Result<bool>;
    async fn backup_schedule(
        &self,
        cluster_id: Uuid,
    ) -> Result<Option<crate::backup::schedule::BackupSchedule>>;
    /// Schedules due at `now` (at most `limit`), of live clusters, the longest overdue first.
    async fn due_backup_schedules(
        &self,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<crate::backup::schedule::BackupSchedule>>;
    /// Moves a schedule's next backup to `next_at`.
    async fn set_backup_schedule_next(
        &self,
        cluster_id: Uuid,
        next_at: DateTime<Utc>,
    ) -> Result<()>;
    /// Ends a restore: Succeeded with what became of each object, or Failed with why.
    async fn finish_restore(
        &self,
        id: Uuid,
        result: std::result::Result<&[crate::backup::RestoreItem], &str>,
        now: DateTime<Utc>,
    ) -> Result<()>;
}

/// The addon catalog operators define (KQueen's built-in addons live in its code) and the
/// addons KQueen manages in each cluster; toggles are queued as operations in the same
/// transaction that records them, with their timeline entry and audit event.
#[async_trait]
pub trait AddonStore: Send + Sync {
    /// Conflict when this name and version exist.
    async fn define_addon(
        &self,
        def: &crate::workloads::addons::AddonDefinition,
        by: &str,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// False when there was none; Conflict while a cluster runs that version.
    async fn undefine_addon(&self, name: &str, version: &str, audit: &AuditEvent) -> Result<bool>;
    async fn defined_addons(&self) -> Result<Vec<crate::workloads::addons::AddonDefinition>>;
    async fn installed_addons(
        &self,
        cluster_id: Uuid,
    ) -> Result<Vec<crate::workloads::addons::installed::InstalledAddon>>;
    /// Every addon KQueen manages in live clusters, by addon, tenant and cluster.
    async fn fleet_addons(&self) -> Result<Vec<crate::workloads::addons::installed::FleetAddon>>;
    /// Records an install, upgrade or change of `addon` (state installing) and queues `op`.
    /// Conflict when the cluster is not Ready or the addon is being changed already.
    async fn queue_addon_apply(
        &self,
        addon: &crate::workloads::addons::installed::InstalledAddon,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// Marks the addon for removal and queues `op`; Conflict while it is busy.
    async fn queue_addon_remove(
        &self,
        cluster_id: Uuid,
        name: &str,
        op: &Operation,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn finish_addon(
        &self,
        cluster_id: Uuid,
        name: &str,
        outcome: crate::workloads::addons::installed::AddonOutcome<'_>,
        now: DateTime<Utc>,
    ) -> Result<()>;
}

/// Which requests for approval to list.
#[derive(Debug, Clone, Default)]
pub struct ApprovalFilter {
    /// Only this cluster's.
    pub cluster: Option<Uuid>,
    /// Only these tenants' (None: every tenant).
    pub tenants: Option<Vec<Uuid>>,
    /// Only those pending (and not expired) at this time.
    pub pending_at: Option<DateTime<Utc>>,
}

/// A request decided: approved, refused or withdrawn, by whom, when, and why.
#[derive(Debug, Clone)]
pub struct Decision<'a> {
    pub state: crate::approval::ApprovalState,
    pub by: &'a str,
    pub at: DateTime<Utc>,
    pub note: Option<&'a str>,
}

/// Production marks on clusters, and requests for a second person's approval of what
/// cannot be undone on them. Each write comes with its timeline entry and audit event.
#[async_trait]
pub trait ApprovalStore: Send + Sync {
    /// Marks a live cluster production, or takes the mark off.
    async fn set_production(
        &self,
        cluster_id: Uuid,
        production: bool,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// Records a pending request. Conflict when the cluster is gone or a request for the
    /// same action on it is pending (and not expired) at its `requested_at`.
    async fn request_approval(
        &self,
        approval: &crate::approval::Approval,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<()>;
    async fn approval(&self, id: Uuid) -> Result<crate::approval::Approval>;
    /// Requests matching `filter`, newest first, at most `limit`.
    async fn approvals(
        &self,
        filter: &ApprovalFilter,
        limit: u32,
    ) -> Result<Vec<crate::approval::Approval>>;
    /// Decides a request that is pending and not expired at `decision.at`: false (nothing
    /// written) when it was decided meanwhile or has expired.
    async fn decide_approval(
        &self,
        id: Uuid,
        decision: &Decision<'_>,
        event: &ClusterEvent,
        audit: &AuditEvent,
    ) -> Result<bool>;
    /// What became of an approved request: the operation it queued, or why it failed.
    async fn approval_outcome(
        &self,
        id: Uuid,
        outcome: std::result::Result<Option<Uuid>, &str>,
    ) -> Result<()>;
}

/// A rollout moved to another state.
#[derive(Debug, Clone)]
pub struct RolloutChange<'a> {
    pub state: crate::rollout::RolloutState,
    /// The wave under way; None keeps the stored one (a person's pause or abort must not
    /// write back a wave a driver turn moved on from meanwhile).
    pub wave: Option<u32>,
    pub reason: Option<&'a str>,
    pub at: DateTime<Utc>,
}

/// A cluster of a rollout moved to another state.
#[derive(Debug, Clone)]
pub struct MemberChange<'a> {
    pub state: crate::rollout::MemberState,
    /// Kept as it was when None; a cluster back to waiting forgets its operation.
    pub operation_id: Option<Uuid>,
    pub reason: Option<&'a str>,
    pub at: DateTime<Utc>,
}

/// What one autoscaling turn leaves: for the next turn, for the chart and for the timeline.
#[derive(Debug, Clone, Copy)]
pub struct AutoscaleTurn<'a> {
    pub cluster_id: Uuid,
    pub underused: &'a crate::autoscale::Underused,
    pub reason: &'a str,
    pub at: DateTime<Utc>,
    /// Kept when the counts changed since the last sample.
    pub sample: Option<&'a crate::autoscale::Sample>,
    /// Written when the decision is news.
    pub event: Option<&'a ClusterEvent>,
}

/// Clusters' autoscaling ([`crate::autoscale`]): settings, what turns leave, node counts over
/// time.
#[async_trait]
pub trait AutoscaleStore: Send + Sync {
    /// Sets a cluster's autoscaling (creates or replaces it; what earlier turns left is
    /// forgotten), with its audit event.
    async fn put_autoscaling(
        &self,
        autoscaling: &crate::autoscale::Autoscaling,
        audit: &AuditEvent,
    ) -> Result<()>;
    /// Turns a cluster's autoscaling off; false when it was off. Its samples stay.
    async fn remove_autoscaling(&self, cluster_id: Uuid, audit: &AuditEvent) -> Result<bool>;
    async fn autoscaling(&self, cluster_id: Uuid) -> Result<Option<crate::autoscale::Autoscaling>>;
    /// Every live cluster's autoscaling, the longest without a turn first, at most `limit`.
    async fn autoscaled_clusters(&self, limit: u32) -> Result<Vec<crate::autoscale::Autoscaling>>;
    /// Records a turn (and forgets samples taken before `keep_since`) in one transaction.
    async fn record_autoscale_turn(
        &self,
        turn: AutoscaleTurn<'_>,
        keep_since: DateTime<Utc>,
    ) -> Result<()>;
    /// A cluster's samples taken at or after `since`, oldest first, at most `limit` (the
    /// newest ones when there are more).
    async fn autoscale_samples(
        &self,
        cluster_id: Uuid,
        since: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<crate::autoscale::Sample>>;
}

/// Upgrades in waves ([`crate::rollout`]).
#[async_trait]
pub trait RolloutStore: Send + Sync {
    /// Records a new rollout with its clusters. `Conflict` (naming the cluster) when one of
    /// them is part of an open rollout where it has not ended: checked in the write, so two
    /// rollouts never upgrade one cluster at once.
    async fn create_rollout(
        &self,
        rollout: &crate::rollout::Rollout,
        members: &[crate::rollout::RolloutMember],
        audit: &AuditEvent,
    ) -> Result<()>;
    /// A rollout with its tally.
    async fn rollout(&self, id: Uuid) -> Result<crate::rollout::Rollout>;
    /// Rollouts newest first, at most `limit`; `tenants`: only those limited to these tenants
    /// (None: all, fleet-wide ones too).
    async fn rollouts(
        &self,
        tenants: Option<&[Uuid]>,
        limit: u32,
    ) -> Result<Vec<crate::rollout::Rollout>>;
    /// Its clusters, by wave and place.
    async fn rollout_members(&self, id: Uuid) -> Result<Vec<crate::rollout::RolloutMember>>;
    /// (cluster, rollout) of every cluster whose part in an open rollout has not ended.
    async fn clusters_in_rollouts(&self) -> Result<Vec<(Uuid, Uuid)>>;
    /// The rollouts the driver follows: running ones, and any with a cluster upgrading.
    async fn driven_rollouts(&self) -> Result<Vec<Uuid>>;
    /// Moves a rollout that is in one of `from` (false, nothing written, when it is not). An
    /// abort also skips its waiting clusters.
    async fn move_rollout(
        &self,
        id: Uuid,
        from: &[crate::rollout::RolloutState],
        change: &RolloutChange<'_>,
        audit: Option<&AuditEvent>,
    ) -> Result<bool>;
    /// Moves one of its clusters that is in `from` (false when it is not).
    async fn move_member(
        &self,
        rollout: Uuid,
        cluster: Uuid,
        from: crate::rollout::MemberState,
        change: &MemberChange<'_>,
    ) -> Result<bool>;
}

/// Everything KQueen keeps.
#[async_trait]
pub trait Store:
    TenantStore
    + UserStore
    + PeopleStore
    + MembershipStore
    + TokenStore
    + SessionStore
    + AuditStore
    + CatalogStore
    + ClusterStore
    + QuotaStore
    + TimelineStore
    + ClusterHistoryStore
    + SharedStorageStore
    + AccessStore
    + OperationStore
    + InventoryStore
    + FleetStore
    + FleetClusterStore
    + ApplicationStore
    + AddonStore
    + BackupStore
    + ApprovalStore
    + RolloutStore
    + AutoscaleStore
    + crate::vault::SecretBackend
    + 'static
{
    fn backend(&self) -> Backend;
    /// Succeeds when the database answers a trivial query.
    async fn ping(&self) -> Result<()>;
    async fn counts(&self) -> Result<Counts>;
    /// Refreshes the query planner's statistics of tables whose rows changed a lot since
    /// (PostgreSQL: ANALYZE of each, whether or not autovacuum runs; SQLite: `PRAGMA
    /// optimize`); returns the tables analysed. Run now and then, and after bulk work.
    async fn refresh_statistics(&self) -> Result<Vec<String>>;
    /// Takes or renews periodic job `job`'s lease for `owner` until `until`: true when
    /// `owner` holds it now (see [`crate::periodic`]).
    async fn take_job_lease(
        &self,
        job: &str,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool>;
    /// Gives up every job lease `owner` holds.
    async fn drop_job_leases(&self, owner: &str) -> Result<()>;
    /// Waits for open connections to finish and closes them (graceful shutdown).
    async fn close(&self);
}
