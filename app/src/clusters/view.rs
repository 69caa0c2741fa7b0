//! `/clusters/:id`: state, live progress, steps and timeline, kubeconfig and access; the
//! actions (scale, upgrade, delete) in their own card; a delete, a revoke or a node's
//! replacement (from the inventory's Nodes table) is confirmed first (`?confirm=`); a
//! production cluster's delete, and taking its mark off, are asked for instead
//! (`crate::approvals`).

use kqueen_dto::clusters::ClusterState;
use kqueen_dto::kinds::ProviderKind;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::approvals::section::RequestStep;
use crate::approvals::ApprovalWrites;
use crate::clusters::actions::{DeleteCluster, RevokeAccess, ScaleCluster, UpgradeCluster};
use crate::clusters::dto::ClusterPageDto;
use crate::components::{confirming, ConfirmStep, ErrorNote, FormError, TableHead};
use crate::fleet::actions::{ReplaceNode, SyncInventory};
use crate::fleet::inventory::{ConfirmReplace, DeadNodeRow, Inventory};
use crate::hydrated::{self, Hydrated};
use crate::time::{to_clock, to_minute, to_minute_utc};

use super::list::StateBadge;

#[component]
pub fn ClusterView() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    // Bumped every 2 s while an operation runs (in the browser, once hydrated).
    let tick = RwSignal::new(0u32);
    let writes = ClusterWrites::new();
    let page = crate::hydrated::resource(
        move || (id(), tick.get(), writes.version()),
        |(id, _, _)| hydrated::fetch(crate::clusters::sfn::cluster_page(id)),
    );
    let busy = RwSignal::new(false);
    Effect::new(move |_| {
        if let Ok(handle) = set_interval_with_handle(
            move || {
                if busy.get_untracked() {
                    tick.update(|t| *t += 1);
                }
            },
            std::time::Duration::from_secs(2),
        ) {
            on_cleanup(move || handle.clear());
        }
    });
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(Hydrated(p)) => {
                        busy.set(p.busy);
                        view! { <Cluster page=p writes /> }.into_any()
                    }
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <Title text="Cluster" /> <h1>"Cluster"</h1> <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Transition>
    }
}

#[component]
fn Cluster(page: ClusterPageDto, writes: ClusterWrites) -> impl IntoView {
    let id = page.detail.cluster.id.clone();
    let [id_scale, id_upgrade, id_delete] = [(); 3].map(|()| id.clone());
    let c = page.detail.cluster.clone();
    let base = format!("/clusters/{}", c.id);
    let op = page.detail.operations.first().cloned();
    let steps: Vec<_> = page
        .detail
        .events
        .iter()
        .filter(|e| e.kind == "step")
        .cloned()
        .collect();
    let ready = matches!(c.state, ClusterState::Ready | ClusterState::Updating);
    let can_delete = page.can_manage && c.state != ClusterState::Deleting;
    let delete_note = delete_consequence(page.detail.capabilities.deletes_infrastructure);
    let kubeconfig_label = if page.admin_kubeconfig {
        "Download admin kubeconfig"
    } else {
        "Download my kubeconfig"
    };
    let kubeconfig_help = if page.admin_kubeconfig {
        "The stored admin kubeconfig (operators). The download is audited."
    } else {
        "A personal kubeconfig: a ServiceAccount for you in the cluster with a short-lived token, bound to your tenant role in the tenant's namespaces (members edit, tenant admins as shown above; never kube-system). The download is audited."
    };
    view! {
        <Title text=format!("Cluster {}", c.name) />
        <div class="page-head">
            <h1>{c.name.clone()} " " <StateBadge state=c.state />{c.production.then(|| view! { " " <span class="badge badge-production" id="production-badge">"production"</span> })}</h1>
            <span class="muted">{format!("tenant {}", c.tenant)}</span>
        </div>
        <FormError />
        <ConfirmCluster
            id=id_delete
            name=c.name.clone()
            production=c.production
            can_unprotect=page.approvals.can_mark && c.production
            can_delete
            can_revoke=ready && !page.admin_kubeconfig
            deletes_infrastructure=page.detail.capabilities.deletes_infrastructure
            writes
        />
        <ConfirmReplace
            cluster_id=c.id.clone()
            can_replace=page.can_replace_nodes
            dead=DeadNodeRow::of(page.inventory.as_ref())
            replace=writes.replace
        />
        {c.error.clone().map(|e| view! { <p class="error" role="alert" id="cluster-error">{e}</p> })}
        {op.clone().filter(|_| page.busy).map(|o| view! {
            <section class="card" aria-labelledby="progress-heading" id="progress">
                <div class="card-head"><h2 id="progress-heading">{format!("{} in progress", crate::apps::operation_label(&o.kind))}</h2></div>
                <progress max="100" value=o.progress.to_string() aria-labelledby="progress-heading" id="progress-bar">{format!("{}%", o.progress)}</progress>
                <p><span id="progress-percent">{format!("{}%", o.progress)}</span> " — " <span id="current-step">{o.step.clone()}</span></p>
                <p class="muted">"This page updates by itself; a reload shows the same state."</p>
            </section>
        })}
        <div class="grid-2">
            <section class="card" aria-labelledby="facts-heading">
                <div class="card-head"><h2 id="facts-heading">"Cluster"</h2></div>
                <dl class="facts">
                    <dt>"API endpoint"</dt><dd id="endpoint">{c.endpoint.clone().unwrap_or_else(|| "not known yet".into())}</dd>
                    <dt>"Template"</dt><dd>{format!("{} ({})", c.template, c.kind)}</dd>
                    <dt>"Tenant admins' access"</dt><dd id="cluster-admin-access" data-access=page.detail.admin_access.clone()>{page.admin_access_label.clone()}</dd>
                    <dt>"Nodes"</dt><dd>{c.node_count}</dd>
                    <dt>"Created"</dt><dd>{format!("{} by {}", to_minute_utc(&c.created_at), c.created_by)}</dd>
                    {page.detail.shared_storage.clone().map(|s| view! {
                        <dt>"etcd"</dt>
                        <dd id="shared-storage">{format!(
                            "{} keys, {:.1} MiB{}, measured {} UTC",
                            s.keys,
                            s.bytes as f64 / 1_048_576.0,
                            if s.writable { "" } else { " (read only)" },
                            to_minute(&s.measured_at)
                        )}</dd>
                    })}
                    <dt>"Time-to-live"</dt><dd id="expires">{c.expires_at.as_deref().map_or_else(|| "none".to_owned(), |e| format!("deleted automatically at {}", to_minute_utc(e)))}</dd>
                    {c.parameters.iter().map(|(k, v)| view! { <dt>{k.clone()}</dt><dd>{v.clone()}</dd> }).collect_view()}
                </dl>
            </section>
            <section class="card" aria-labelledby="access-heading">
                <div class="card-head"><h2 id="access-heading">"Access"</h2></div>
                {if ready {
                    view! {
                        <p><a class="button" rel="external" href=format!("{base}/kubeconfig") id="kubeconfig-download">{kubeconfig_label}</a></p>
                        <p class="muted">{kubeconfig_help}</p>
                        <p class="muted">"Or let kubectl fetch fresh credentials by itself whenever they expire, so it never needs another download (the kqueen command line; log in with a personal API token):"</p>
                        <pre id="kubectl-exec"><code>{format!("kqueen login {}\nkqueen kubeconfig {}/{} --exec", page.public_url, c.tenant, c.name)}</code></pre>
                        {(!page.admin_kubeconfig).then(|| view! {
                            <p><a class="danger" href=format!("{base}?confirm=revoke") id="revoke-access">"Revoke my access…"</a></p>
                        })}
                    }.into_any()
                } else {
                    view! { <p class="muted">"Kubeconfigs are available once the cluster is Ready."</p> }.into_any()
                }}
            </section>
            {(page.can_manage && (can_delete || ready)).then(|| view! {
            <section class="card" aria-labelledby="actions-heading" id="cluster-actions">
                <div class="card-head"><h2 id="actions-heading">"Actions"</h2></div>
                {page.node_range.filter(|_| page.detail.capabilities.scale && ready).map(|(min, max)| view! {
                    <ActionForm action=writes.scale attr:class="filter" attr:id="scale-form">
                        <input type="hidden" name="id" value=id_scale />
                        <label for="scale-nodes">{format!("Nodes ({min}–{max})")}</label>
                        <input type="number" id="scale-nodes" name="node_count" min=min.to_string() max=max.to_string() value=c.node_count.to_string() required />
                        <button type="submit">"Scale"</button>
                    </ActionForm>
                })}
                {(page.detail.capabilities.upgrade && ready).then(|| {
                    let current = c.parameters.get("kubernetes_version").cloned().unwrap_or_default();
                    let field = if page.version_options.is_empty() {
                        view! { <input id="upgrade-version" name="kubernetes_version" maxlength="20" required /> }.into_any()
                    } else {
                        view! {
                            <select id="upgrade-version" name="kubernetes_version" required>
                                {page.version_options.iter().map(|v| {
                                    let selected = *v == current;
                                    view! { <option value=v.clone() selected=selected>{v.clone()}</option> }
                                }).collect_view()}
                            </select>
                        }.into_any()
                    };
                    view! {
                        <ActionForm action=writes.upgrade attr:class="filter" attr:id="upgrade-form">
                            <input type="hidden" name="id" value=id_upgrade />
                            <label for="upgrade-version">"Kubernetes version"</label>
                            {field}
                            <button type="submit">"Upgrade"</button>
                        </ActionForm>
                    }
                })}
                {(ready && c.kind == ProviderKind::Hosted).then(|| view! {
                    <p><a href=format!("/clusters/{}/join", c.id) id="join-link">"Add worker nodes (kubeadm join)"</a></p>
                })}
                {can_delete.then(|| view! {
                    <p class="muted">{delete_note}</p>
                    <p><a class="button danger" href=format!("{base}?confirm=delete") id="delete-cluster">{if c.production { "Request deletion…" } else { "Delete cluster…" }}</a></p>
                })}
            </section>
            })}
        </div>
        <crate::approvals::ClusterApprovals cluster_id=c.id.clone() production=c.production approvals=page.approvals.clone() writes=writes.approvals />
        <crate::apps::ClusterApps cluster_id=c.id.clone() can_deploy=page.can_manage && c.state == ClusterState::Ready />
        <crate::addons::ClusterAddons cluster_id=c.id.clone() can_manage=page.can_manage ready=c.state == ClusterState::Ready />
        <crate::autoscaling::ClusterAutoscaling cluster_id=c.id.clone() />
        {page.can_back_up.then(|| view! {
            <crate::backups::ClusterBackups cluster_id=c.id.clone() ready=c.state == ClusterState::Ready key_space=c.kind == ProviderKind::Hosted />
        })}
        {page.inventory.clone().map(|inv| view! {
            <Inventory inventory=inv cluster_id=c.id.clone() can_sync=page.can_manage && c.state == ClusterState::Ready can_replace=page.can_replace_nodes sync=writes.sync />
        })}
        <section class="card" aria-labelledby="steps-heading">
            <div class="card-head"><h2 id="steps-heading">"Steps"</h2></div>
            <ol class="steps" id="step-list">
                {steps.into_iter().map(|s| view! { <li><time>{to_clock(&s.at)}</time> " " {s.message}</li> }).collect_view()}
            </ol>
        </section>
        <section class="card" aria-labelledby="timeline-heading">
            <div class="card-head"><h2 id="timeline-heading">"Timeline"</h2></div>
            <ol class="timeline" id="timeline">
                {page.detail.events.into_iter().map(|e| view! {
                    <li class=format!("event-{}", e.kind) data-kind=e.kind.clone()><time>{to_clock(&e.at)}</time> " " <span>{e.message}</span></li>
                }).collect_view()}
            </ol>
        </section>
        <section class="card" aria-labelledby="ops-heading">
            <div class="card-head"><h2 id="ops-heading">"Operations"</h2></div>
            <table class="table" id="operations">
                <TableHead cols=vec!["Operation", "State", "Progress", "Attempts", "Requested", "Finished"] />
                <tbody>
                    {page.detail.operations.into_iter().map(|o| view! {
                        <tr>
                            <td>{crate::apps::operation_label(&o.kind)}</td>
                            <td>{o.state}{o.error.map(|e| view! { <br /><small class="error-text">{e}</small> })}</td>
                            <td>{format!("{}%", o.progress)}</td>
                            <td>{o.attempts}</td>
                            <td>{format!("{} UTC by {}", to_minute(&o.created_at), o.requested_by)}</td>
                            <td>{o.finished_at.map(|t| format!("{} UTC", to_minute(&t))).unwrap_or_default()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

/// What deleting this cluster does, in one sentence.
fn delete_consequence(deletes_infrastructure: bool) -> &'static str {
    if deletes_infrastructure {
        "Deleting runs the provisioner's delete: the cluster's machines are removed, with everything that runs on them."
    } else {
        "Deleting makes KQueen forget this cluster; nothing is removed from it."
    }
}

/// The confirmation of a delete (`?confirm=delete`) or of revoking one's own access
/// (`?confirm=revoke`), above the page. A delete that removes machines asks for the
/// cluster's name, and the server function checks it.
#[component]
fn ConfirmCluster(
    id: String,
    name: String,
    /// Production: a delete is asked for ([`crate::approvals::section::RequestStep`]).
    production: bool,
    /// May ask to take the production mark off.
    can_unprotect: bool,
    can_delete: bool,
    can_revoke: bool,
    deletes_infrastructure: bool,
    writes: ClusterWrites,
) -> impl IntoView {
    let confirm = confirming();
    let cancel = format!("/clusters/{id}");
    move || {
        let (id, name, cancel) = (id.clone(), name.clone(), cancel.clone());
        match confirm.get().as_deref() {
        Some("delete") if can_delete && production => view! {
            <RequestStep id=id.clone() name=name.clone() action="delete" writes=writes.approvals />
        }.into_any(),
        Some("unprotect") if can_unprotect => view! {
            <RequestStep id=id.clone() name=name.clone() action="unprotect" writes=writes.approvals />
        }.into_any(),
        Some("delete") if can_delete => view! {
            <ConfirmStep id="confirm-delete" title=format!("Delete cluster {name}?") cancel=cancel.clone()>
                <p>{delete_consequence(deletes_infrastructure)} " This cannot be undone."</p>
                <ActionForm action=writes.delete attr:class="stack" attr:id="delete-form">
                    <input type="hidden" name="id" value=id.clone() />
                    {deletes_infrastructure.then(|| view! {
                        <div class="field">
                            <label for="confirm-name">"Type the cluster's name, " <code>{name.clone()}</code> ", to confirm"</label>
                            <input id="confirm-name" name="confirm" required autocomplete="off" spellcheck="false" autofocus />
                        </div>
                    })}
                    <button type="submit" class="danger" id="confirm-delete-submit">"Delete cluster"</button>
                </ActionForm>
            </ConfirmStep>
        }.into_any(),
        Some("revoke") if can_revoke => view! {
            <ConfirmStep id="confirm-revoke" title=format!("Revoke your access to {name}?") cancel=cancel.clone()>
                <p>"Your personal kubeconfigs for this cluster stop working at once (their ServiceAccount is deleted). You can download a new one later."</p>
                <ActionForm action=writes.revoke attr:id="revoke-form">
                    <input type="hidden" name="id" value=id.clone() />
                    <button type="submit" class="danger" id="confirm-revoke-submit">"Revoke my access"</button>
                </ActionForm>
            </ConfirmStep>
        }.into_any(),
        _ => ().into_any(),
        }
    }
}

/// The cluster page's writes. Every one ends by reading the page again (hydrated, a write
/// does not reload the page).
#[derive(Clone, Copy)]
struct ClusterWrites {
    delete: ServerAction<DeleteCluster>,
    scale: ServerAction<ScaleCluster>,
    upgrade: ServerAction<UpgradeCluster>,
    revoke: ServerAction<RevokeAccess>,
    sync: ServerAction<SyncInventory>,
    replace: ServerAction<ReplaceNode>,
    approvals: ApprovalWrites,
}

impl ClusterWrites {
    fn new() -> Self {
        Self {
            delete: ServerAction::new(),
            scale: ServerAction::new(),
            upgrade: ServerAction::new(),
            revoke: ServerAction::new(),
            sync: ServerAction::new(),
            replace: ServerAction::new(),
            approvals: ApprovalWrites::new(),
        }
    }

    /// Changes whenever one of them finishes.
    fn version(&self) -> usize {
        self.delete.version().get()
            + self.scale.version().get()
            + self.upgrade.version().get()
            + self.revoke.version().get()
            + self.sync.version().get()
            + self.replace.version().get()
            + self.approvals.version()
    }
}
