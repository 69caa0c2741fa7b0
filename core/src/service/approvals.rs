//! Production clusters and the two-person rule ([`crate::approval`]): tenant admins and
//! operators mark a cluster production; from then on deleting it, restoring a backup over it
//! and taking the mark off are asked for here and run only once a second operator or tenant
//! admin approves. Every step is audited and written on the cluster's timeline.

use chrono::{DateTime, Utc};

use super::backups::Backups;
use super::clusters::{Clusters, Via};
use super::guard::Guard;
use crate::approval::{self, Approval, ApprovalAction, ApprovalState, RestoreDetail};
use crate::audit::{action, AuditEvent};
use crate::cluster::{Cluster, ClusterEvent, EventKind, OperationKind};
use crate::deps::Deps;
use crate::identity::Identity;
use crate::policy::{self, Permission};
use crate::store::{ApprovalFilter, Decision};
use crate::{Actor, Error, Result, ValidationError};

/// Requests listed at most.
const LISTED: u32 = 200;

/// A request as asked for.
#[derive(Debug, Clone, Default)]
pub struct ApprovalInput {
    /// `delete`, `restore` or `unprotect`.
    pub action: String,
    /// For a restore: the backup (id) and its namespaces (empty: all).
    pub backup: Option<String>,
    pub namespaces: Vec<String>,
    pub reason: Option<String>,
}

#[derive(Clone)]
pub struct Approvals {
    deps: Deps,
    guard: Guard,
    clusters: Clusters,
    backups: Backups,
}

impl Approvals {
    pub(super) fn new(deps: &Deps, guard: &Guard, clusters: &Clusters, backups: &Backups) -> Self {
        Self {
            deps: deps.clone(),
            guard: guard.clone(),
            clusters: clusters.clone(),
            backups: backups.clone(),
        }
    }

    /// The person acting: requests are asked for and decided by people, not by the CLI or the
    /// system (refused, audited).
    async fn person<'a>(
        &self,
        actor: &'a Actor,
        verb: &str,
        cluster: &Cluster,
    ) -> Result<&'a Identity> {
        let result = actor.identity().ok_or_else(|| {
            Error::Refused(
                "requests for approval are asked for and decided by people: log in".into(),
            )
        });
        self.audited(actor, verb, cluster, result).await
    }

    /// Marks a cluster production (tenant admins and operators). Taking the mark off needs a
    /// second person: Conflict, with guidance.
    pub async fn set_production(
        &self,
        actor: &Actor,
        cluster_id: &str,
        production: bool,
    ) -> Result<Cluster> {
        let verb = action::CLUSTER_PRODUCTION;
        let cluster = self.approver_of(actor, cluster_id, verb).await?;
        let result = match (cluster.production, production) {
            (true, true) | (false, false) => Ok(()),
            (true, false) => Err(Error::Conflict(format!(
                "{} is a production cluster: taking the mark off needs a second person's \
                 approval. Ask for it (POST /api/v1/clusters/{}/approvals with action \
                 \"unprotect\", or \"Request to unmark\" on its page)",
                cluster.name, cluster.id
            ))),
            (false, true) if cluster.state == crate::cluster::ClusterState::Deleting => {
                Err(Error::Conflict(format!(
                    "{} is being deleted: it cannot be marked production",
                    cluster.name
                )))
            }
            (false, true) => {
                let who = actor.to_string();
                self.write_production(
                    actor,
                    &cluster,
                    true,
                    &format!("marked production by {who}"),
                )
                .await
            }
        };
        self.audited(actor, verb, &cluster, result).await?;
        self.deps.store.cluster(cluster.id).await
    }

    async fn write_production(
        &self,
        actor: &Actor,
        cluster: &Cluster,
        production: bool,
        what: &str,
    ) -> Result<()> {
        let now = crate::clock::now();
        let event = ClusterEvent::new(
            cluster.id,
            None,
            EventKind::State,
            format!(
                "{}: {what}",
                if production {
                    "Production"
                } else {
                    "No longer production"
                }
            ),
            now,
        );
        let audit = AuditEvent::success(actor, action::CLUSTER_PRODUCTION, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(what);
        self.deps
            .store
            .set_production(cluster.id, production, &event, &audit)
            .await
    }

    /// The cluster, when `actor` may mark it and decide its requests (tenant admins of its
    /// tenant and operators); members get Forbidden, other tenants NotFound (audited).
    async fn approver_of(&self, actor: &Actor, cluster_id: &str, verb: &str) -> Result<Cluster> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, verb)
            .await?;
        self.authorize(
            actor,
            Permission::ApproveChanges(cluster.tenant_id),
            verb,
            &cluster,
        )
        .await?;
        Ok(cluster)
    }

    /// Asks for a second person's approval of `input.action` on a production cluster. Who
    /// may ask: for a delete, whoever may delete the tenant's clusters (members too); for a
    /// restore, whoever may restore the backup into it; to take the mark off, tenant admins
    /// and operators.
    pub async fn request(
        &self,
        actor: &Actor,
        cluster_id: &str,
        input: &ApprovalInput,
    ) -> Result<Approval> {
        let verb = action::APPROVAL_REQUEST;
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, verb)
            .await?;
        let action = ApprovalAction::parse(input.action.trim()).ok_or_else(|| {
            ValidationError::new("action", "must be one of delete, restore, unprotect")
        });
        let action = self
            .audited(actor, verb, &cluster, action.map_err(Error::from))
            .await?;
        let permission = match action {
            ApprovalAction::Delete => Permission::ManageClusters(cluster.tenant_id),
            ApprovalAction::Restore => Permission::ManageBackups(cluster.tenant_id),
            ApprovalAction::Unprotect => Permission::ApproveChanges(cluster.tenant_id),
        };
        self.authorize(actor, permission, verb, &cluster).await?;
        let who = self.person(actor, verb, &cluster).await?;
        // Before the restore check: a request that will be refused reads no backup.
        if !cluster.production {
            let e = Error::Conflict(format!(
                "{} is not a production cluster: {} needs no approval",
                cluster.name,
                match action {
                    ApprovalAction::Delete => "deleting it",
                    ApprovalAction::Restore => "restoring over it",
                    ApprovalAction::Unprotect => "it has no mark to take off; it",
                }
            ));
            return self.refused(actor, verb, &cluster, e).await;
        }
        let restore = match action {
            ApprovalAction::Restore => {
                let backup = input.backup.as_deref().map(str::trim).unwrap_or("");
                if backup.is_empty() {
                    let e = Error::from(ValidationError::new(
                        "backup",
                        "choose the backup to restore",
                    ));
                    return self.refused(actor, verb, &cluster, e).await;
                }
                // Checked as the restore itself will be: the backup, its namespaces, the
                // requester's rights over both tenants.
                let (backup, _, namespaces) = self
                    .backups
                    .check_restore(actor, backup, &cluster.id.to_string(), &input.namespaces)
                    .await?;
                Some(RestoreDetail {
                    backup_id: backup.id,
                    namespaces,
                })
            }
            _ => None,
        };
        let reason = match approval::reason("reason", input.reason.as_deref()) {
            Ok(r) => r,
            Err(e) => return self.refused(actor, verb, &cluster, e).await,
        };
        let now = crate::clock::now();
        let approval = Approval::new(
            cluster.tenant_id,
            cluster.id,
            cluster.name.as_str(),
            action,
            restore,
            &reason,
            who,
            now,
        );
        let mut what = format!(
            "{} asked to {}; waiting for a second operator or tenant admin to approve",
            who.username,
            action.words()
        );
        if let Some(r) = &approval.restore {
            what.push_str(&format!(" (backup {})", r.backup_id));
        }
        let event = ClusterEvent::new(cluster.id, None, EventKind::State, what, now);
        let audit = AuditEvent::success(actor, verb, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("{} (request {})", action, approval.id));
        let result = self
            .deps
            .store
            .request_approval(&approval, &event, &audit)
            .await;
        self.audited(actor, verb, &cluster, result).await?;
        Ok(approval)
    }

    /// Passes `result` through, auditing a client error as a refused `verb` on `cluster`.
    async fn audited<T>(
        &self,
        actor: &Actor,
        verb: &str,
        cluster: &Cluster,
        result: Result<T>,
    ) -> Result<T> {
        self.guard
            .audited(
                actor,
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
                result,
            )
            .await
    }

    /// Checks `permission` for `actor`, auditing a refusal as `verb` on `cluster`.
    async fn authorize(
        &self,
        actor: &Actor,
        permission: Permission,
        verb: &str,
        cluster: &Cluster,
    ) -> Result<()> {
        self.guard
            .authorize(
                actor,
                permission,
                verb,
                cluster.name.as_str(),
                Some(cluster.tenant_id),
            )
            .await
    }

    /// Audits `error` as a refused `verb` on `cluster` and returns it.
    async fn refused<T>(
        &self,
        actor: &Actor,
        verb: &str,
        cluster: &Cluster,
        error: Error,
    ) -> Result<T> {
        self.audited(actor, verb, cluster, Err(error)).await
    }

    /// A request `actor` may see (any member of its tenant, and operators); others answer
    /// NotFound (audited).
    async fn visible(&self, actor: &Actor, id: &str, verb: &str) -> Result<Approval> {
        let store = &self.deps.store;
        self.guard
            .visible(
                actor,
                verb,
                (id, "approval request"),
                |uuid| store.approval(uuid),
                |a: &Approval| a.tenant_id,
            )
            .await
    }

    /// One request.
    pub async fn get(&self, actor: &Actor, id: &str) -> Result<Approval> {
        self.visible(actor, id, action::APPROVAL_VIEW).await
    }

    /// A cluster's requests, newest first.
    pub async fn of_cluster(&self, actor: &Actor, cluster_id: &str) -> Result<Vec<Approval>> {
        let cluster = self
            .clusters
            .visible_cluster(actor, cluster_id, action::APPROVAL_VIEW)
            .await?;
        let filter = ApprovalFilter {
            cluster: Some(cluster.id),
            ..ApprovalFilter::default()
        };
        self.deps.store.approvals(&filter, LISTED).await
    }

    /// Requests in the tenants `actor` belongs to (operators: all), newest first; only those
    /// waiting for a decision when `pending`.
    pub async fn list(&self, actor: &Actor, pending: bool) -> Result<Vec<Approval>> {
        let tenants = if policy::check(actor, Permission::ListAllTenants).is_ok() {
            None
        } else {
            match actor.identity() {
                Some(who) => Some(who.memberships.iter().map(|m| m.tenant_id).collect()),
                None => {
                    let e = Error::Unauthenticated;
                    self.guard
                        .audit_refusal(actor, action::APPROVAL_VIEW, "approvals", None, &e)
                        .await?;
                    return Err(e);
                }
            }
        };
        let filter = ApprovalFilter {
            cluster: None,
            tenants,
            pending_at: pending.then(crate::clock::now),
        };
        self.deps.store.approvals(&filter, LISTED).await
    }

    /// A second person approves: the request is decided (once, whoever comes first), then its
    /// action runs as theirs. Returns the request as it ends: approved with the operation it
    /// queued, or failed with why the action could not run (the request is spent either way).
    pub async fn approve(&self, actor: &Actor, id: &str) -> Result<Approval> {
        let verb = action::APPROVAL_APPROVE;
        let (request, cluster, now) = self.decidable(actor, id, verb).await?;
        let who = self.person(actor, verb, &cluster).await?;
        let check = request.check_approver(who, now);
        self.audited(actor, verb, &cluster, check).await?;
        let what = format!(
            "{} approved {}'s request to {}",
            who.username,
            request.requested_by,
            request.action.words()
        );
        let decision = Decision {
            state: ApprovalState::Approved,
            by: &who.username,
            at: now,
            note: None,
        };
        self.decide(actor, &request, &cluster, &decision, what, verb)
            .await?;
        let outcome = match request.action {
            ApprovalAction::Delete => self
                .clusters
                .try_enqueue(
                    actor,
                    &cluster,
                    OperationKind::Delete,
                    None,
                    action::CLUSTER_DELETE,
                    Via::Approval(&request),
                )
                .await
                .map(|op| Some(op.id)),
            ApprovalAction::Restore => self
                .backups
                .restore_approved(actor, &request)
                .await
                .map(|op| Some(op.id)),
            ApprovalAction::Unprotect => {
                let what = format!(
                    "asked by {}, approved by {}",
                    request.requested_by, who.username
                );
                self.write_production(actor, &cluster, false, &what)
                    .await
                    .map(|()| None)
            }
        };
        let outcome = self.audited(actor, verb, &cluster, outcome).await;
        let stored = outcome.map_err(|e| e.public().message);
        self.deps
            .store
            .approval_outcome(
                request.id,
                stored.as_ref().map(|op| *op).map_err(String::as_str),
            )
            .await?;
        self.deps.store.approval(request.id).await
    }

    /// Refuses a request (a second person), or withdraws it (the one who asked).
    pub async fn refuse(&self, actor: &Actor, id: &str, reason: Option<&str>) -> Result<Approval> {
        let verb = action::APPROVAL_REFUSE;
        let request = self.visible(actor, id, verb).await?;
        let cluster = self.cluster_of(actor, &request, verb).await?;
        let who = self.person(actor, verb, &cluster).await?;
        let own = who.user_id == request.requested_by_id;
        if !own {
            self.authorize(
                actor,
                Permission::ApproveChanges(request.tenant_id),
                verb,
                &cluster,
            )
            .await?;
        }
        let now = crate::clock::now();
        let checked = request
            .check_pending(now)
            .and_then(|()| approval::reason("reason", reason));
        let note = self.audited(actor, verb, &cluster, checked).await?;
        let (state, what) = if own {
            (
                ApprovalState::Withdrawn,
                format!(
                    "{} withdrew the request to {}",
                    who.username,
                    request.action.words()
                ),
            )
        } else {
            (
                ApprovalState::Refused,
                format!(
                    "{} refused {}'s request to {}",
                    who.username,
                    request.requested_by,
                    request.action.words()
                ),
            )
        };
        let what = if note.is_empty() {
            what
        } else {
            format!("{what}: {note}")
        };
        let decision = Decision {
            state,
            by: &who.username,
            at: now,
            note: (!note.is_empty()).then_some(note.as_str()),
        };
        self.decide(actor, &request, &cluster, &decision, what, verb)
            .await?;
        self.deps.store.approval(request.id).await
    }

    /// The request, its cluster and the time, when `actor` may decide requests of its tenant.
    async fn decidable(
        &self,
        actor: &Actor,
        id: &str,
        verb: &str,
    ) -> Result<(Approval, Cluster, DateTime<Utc>)> {
        let request = self.visible(actor, id, verb).await?;
        let cluster = self.cluster_of(actor, &request, verb).await?;
        self.authorize(
            actor,
            Permission::ApproveChanges(request.tenant_id),
            verb,
            &cluster,
        )
        .await?;
        Ok((request, cluster, crate::clock::now()))
    }

    /// The live cluster of a request; a request of a deleted cluster cannot be decided. A
    /// request decided already says so first (an approved delete is why its cluster is gone).
    async fn cluster_of(&self, actor: &Actor, request: &Approval, verb: &str) -> Result<Cluster> {
        let found = match self.deps.store.cluster(request.cluster_id).await {
            Ok(c) => Ok(c),
            Err(Error::NotFound(_)) => Err(request
                .check_pending(crate::clock::now())
                .err()
                .unwrap_or_else(|| {
                    Error::Conflict(format!(
                        "cluster {} is gone; the request can no longer be decided",
                        request.cluster_name
                    ))
                })),
            Err(e) => Err(e),
        };
        self.guard
            .audited(
                actor,
                verb,
                &request.cluster_name,
                Some(request.tenant_id),
                found,
            )
            .await
    }

    /// Writes the decision, once: Conflict when someone decided it first or it expired.
    async fn decide(
        &self,
        actor: &Actor,
        request: &Approval,
        cluster: &Cluster,
        decision: &Decision<'_>,
        what: String,
        verb: &str,
    ) -> Result<()> {
        let event = ClusterEvent::new(
            cluster.id,
            None,
            EventKind::State,
            what.clone(),
            decision.at,
        );
        let audit = AuditEvent::success(actor, verb, cluster.name.as_str())
            .in_tenant(cluster.tenant_id)
            .with_detail(format!("{what} (request {})", request.id));
        let decided = self
            .deps
            .store
            .decide_approval(request.id, decision, &event, &audit)
            .await?;
        let result = if decided {
            Ok(())
        } else {
            Err(Error::Conflict(
                "the request was decided by someone else meanwhile, or has expired".into(),
            ))
        };
        self.audited(actor, verb, cluster, result).await
    }
}
