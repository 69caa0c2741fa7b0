//! The inventory section of a cluster page: sync status, charts of CPU and memory per node
//! and of pods per phase, the nodes table, workloads by namespace, and audit findings. A node
//! that is not Ready offers "Replace…" to those who may have it replaced; the confirmation
//! step ([`ConfirmReplace`], `?confirm=replace-node&name=<node>`) shows above the page.

use leptos::prelude::*;

use crate::components::{confirming, confirming_name, ConfirmStep, ListCard, TableHead};

use crate::fleet::actions::{ReplaceNode, SyncInventory};
use crate::fleet::dto::{InventoryDto, NodeRowDto};

/// A chart drawn on the server: the SVG goes into the page as is.
#[component]
pub fn Chart(svg: String, id: &'static str) -> impl IntoView {
    view! { <figure class="chart" id=id inner_html=svg></figure> }
}

#[component]
pub fn Inventory(
    inventory: InventoryDto,
    cluster_id: String,
    can_sync: bool,
    /// The caller may have nodes that are not Ready replaced (each gets "Replace…").
    can_replace: bool,
    sync: ServerAction<SyncInventory>,
) -> impl IntoView {
    let inv = inventory;
    let replace_on = can_replace.then(|| format!("/clusters/{cluster_id}"));
    // A cluster is synced as soon as it is Ready: until that first read ends, say so
    // rather than "never" and "no metrics API".
    let first_sync = inv.attempted.is_none();
    let usage_note = if first_sync {
        "The first sync is reading the cluster: its nodes, workloads and usage appear here when it ends (reload the page)."
    } else if inv.metrics {
        "Used CPU and memory come from the cluster's metrics API (metrics.k8s.io)."
    } else {
        "The cluster serves no metrics API: usage is shown as the pods' requests against what the nodes can allocate."
    };
    view! {
        <section class="card" aria-labelledby="inventory-heading" id="inventory">
            <div class="card-head">
                <h2 id="inventory-heading">"Inventory"</h2>
                {can_sync.then(|| view! {
                    <ActionForm action=sync>
                        <input type="hidden" name="id" value=cluster_id />
                        <button type="submit" id="sync-now">"Sync now"</button>
                    </ActionForm>
                })}
            </div>
            <dl class="facts">
                <dt>"Kubernetes API server"</dt>
                <dd id="api-version">{inv.api_version.clone().unwrap_or_else(|| "not known yet".into())}</dd>
                <dt>"Last sync"</dt>
                <dd id="last-sync">{if first_sync {
                        "first sync running".to_owned()
                    } else {
                        inv.synced.clone().unwrap_or_else(|| "never".into())
                    }}
                    {inv.stale.then(|| view! { " " <span class="badge badge-warn" id="stale">"stale"</span> })}
                </dd>
                <dt>"Last attempt"</dt>
                <dd>{inv.attempted.clone().unwrap_or_else(|| "none yet".into())}</dd>
                <dt>"Nodes, pods"</dt>
                <dd>{format!("{} nodes, {} pods", inv.nodes.len(), inv.pods)}</dd>
            </dl>
            {inv.error.clone().map(|e| view! {
                <p class="error" role="alert" id="inventory-error">"The last sync failed: " {e}</p>
            })}
            <p class="muted" id="usage-source">{usage_note}</p>
        </section>
        <div class="grid-2">
            <Chart svg=inv.cpu_chart.clone() id="chart-cpu" />
            <Chart svg=inv.memory_chart.clone() id="chart-memory" />
        </div>
        <section class="card" aria-labelledby="nodes-heading">
            <div class="card-head"><h2 id="nodes-heading">{format!("Nodes ({})", inv.nodes.len())}</h2></div>
            <NodesTable nodes=inv.nodes.clone() metrics=inv.metrics replace_on />
        </section>
        <section class="card" aria-labelledby="workloads-heading">
            <div class="card-head"><h2 id="workloads-heading">"Workloads by namespace"</h2></div>
            <Chart svg=inv.pods_chart.clone() id="chart-pods" />
            {if inv.namespaces.is_empty() {
                view! { <p class="empty">"No workloads."</p> }.into_any()
            } else {
                view! {
                    <div id="namespaces">
                        {inv.namespaces.into_iter().map(|ns| {
                            let open = ns.not_ready > 0;
                            let summary = format!(
                                "{} — {} workload(s){}",
                                ns.namespace,
                                ns.workloads.len(),
                                if ns.not_ready > 0 { format!(", {} not ready", ns.not_ready) } else { String::new() }
                            );
                            view! {
                                <details open=open data-namespace=ns.namespace.clone()>
                                    <summary>{summary}</summary>
                                    <table class="table">
                                        <TableHead cols=vec!["Kind", "Name", "Ready", "State"] />
                                        <tbody>
                                            {ns.workloads.into_iter().map(|w| { let class = format!("badge badge-{}", w.state.to_lowercase()); view! {
                                                <tr>
                                                    <td>{w.kind}</td>
                                                    <td>{w.name}</td>
                                                    <td>{format!("{}/{}", w.ready, w.desired)}</td>
                                                    <td><span class=class>{w.state}</span></td>
                                                </tr>
                                            }}).collect_view()}
                                        </tbody>
                                    </table>
                                </details>
                            }
                        }).collect_view()}
                    </div>
                }.into_any()
            }}
        </section>
        <ListCard name="cluster-findings" heading=format!("Audit findings ({})", inv.findings.len()) empty="No findings." is_empty=inv.findings.is_empty()>
            <table class="table" id="cluster-findings">
                <TableHead cols=vec!["Severity", "Check", "Subject", "Finding"] />
                <tbody>
                    {inv.findings.into_iter().map(|f| { let class = format!("badge badge-sev-{}", f.severity); view! {
                        <tr>
                            <td><span class=class>{f.severity}</span></td>
                            <td><code>{f.check}</code></td>
                            <td>{f.subject}</td>
                            <td>{f.message}</td>
                        </tr>
                    }}).collect_view()}
                </tbody>
            </table>
        </ListCard>
    }
}

/// The nodes; with `replace_on` (the cluster page's path), each node that is not Ready links
/// to the confirmation of its replacement, in its status cell (on a phone the table scrolls:
/// a column of its own would start off screen).
#[component]
fn NodesTable(nodes: Vec<NodeRowDto>, metrics: bool, replace_on: Option<String>) -> impl IntoView {
    if nodes.is_empty() {
        return view! { <p class="empty">"No nodes reported."</p> }.into_any();
    }
    let used = metrics.then_some("Used (CPU, memory)");
    let cols = [
        "Node",
        "Status",
        "CPU requested / allocatable",
        "Memory requested / allocatable",
    ]
    .into_iter()
    .chain(used)
    .chain(["Pods", "Kubelet", "Runtime", "OS"])
    .collect();
    view! {
        <div class="table-scroll">
            <table class="table" id="nodes">
                <TableHead cols=cols />
                <tbody>
                    {nodes.into_iter().map(|n| {
                        let status = if n.ready { "Ready".to_owned() } else { "NotReady".to_owned() };
                        let class = if n.ready { "badge badge-ready" } else { "badge badge-failed" };
                        let name = n.name.clone();
                        let replace = replace_on.as_ref().filter(|_| !n.ready).map(|page| {
                            let href = format!(
                                "{page}?confirm=replace-node&name={}",
                                crate::query::encode_query_value(&n.name)
                            );
                            view! {
                                <br /><a class="button danger replace-node" href=href data-node=n.name.clone()
                                    aria-label=format!("Replace node {}…", n.name)>"Replace…"</a>
                            }
                        });
                        view! {
                            <tr data-node=name>
                                <th scope="row">{n.name}</th>
                                <td><span class=class>{status}</span>
                                    {(!n.problems.is_empty()).then(|| view! { <br /><small class="error-text">{n.problems.join(", ")}</small> })}
                                    {n.not_ready_since.clone().map(|t| view! { <br /><small class="not-ready-since">{format!("since {t}")}</small> })}
                                    {replace}
                                </td>
                                <td>{format!("{} / {}", n.requested.cpu, n.allocatable.cpu)}<br /><small class="muted">{format!("capacity {}", n.capacity.cpu)}</small></td>
                                <td>{format!("{} / {}", n.requested.memory, n.allocatable.memory)}<br /><small class="muted">{format!("capacity {}", n.capacity.memory)}</small></td>
                                {metrics.then(|| view! {
                                    <td>{n.used.clone().map_or_else(|| "unknown".to_owned(), |u| format!("{}, {}", u.cpu, u.memory))}</td>
                                })}
                                <td>{n.pods}</td>
                                <td>{n.kubelet}</td>
                                <td>{n.runtime}</td>
                                <td>{n.os}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

/// A node the confirmation may name: one the last sync saw not Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadNodeRow {
    pub name: String,
    /// "2026-11-26 13:20 UTC".
    pub since: Option<String>,
    /// Why, as the node's conditions said.
    pub problems: Vec<String>,
}

impl DeadNodeRow {
    /// The nodes of `inventory` that are not Ready.
    pub fn of(inventory: Option<&InventoryDto>) -> Vec<Self> {
        inventory
            .map(|i| {
                i.nodes
                    .iter()
                    .filter(|n| !n.ready)
                    .map(|n| Self {
                        name: n.name.clone(),
                        since: n.not_ready_since.clone(),
                        problems: n.problems.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The confirmation of a node's replacement (`?confirm=replace-node&name=<node>`), above the
/// cluster page: what happens to the node, its machine and its pods, and the button that asks
/// for it. Only for a node the inventory saw not Ready; the core asks the cluster again.
#[component]
pub fn ConfirmReplace(
    cluster_id: String,
    can_replace: bool,
    dead: Vec<DeadNodeRow>,
    replace: ServerAction<ReplaceNode>,
) -> impl IntoView {
    let (confirm, which) = (confirming(), confirming_name());
    move || {
        let name = which
            .get()
            .filter(|_| can_replace && confirm.get().as_deref() == Some("replace-node"))?;
        let node = dead.iter().find(|d| d.name == name)?.clone();
        let (cluster_id, cancel) = (cluster_id.clone(), format!("/clusters/{cluster_id}"));
        let since = node
            .since
            .map(|t| format!(" since {t}"))
            .unwrap_or_default();
        let why = if node.problems.is_empty() {
            String::new()
        } else {
            format!(" ({})", node.problems.join(", "))
        };
        let state = format!("As of the last sync, node {name} has not been Ready{since}{why}.");
        Some(view! {
            <ConfirmStep id="confirm-replace" title=format!("Replace node {name}?") cancel>
                <p id="confirm-replace-state">{state}</p>
                <p>{format!(
                    "Node {name} is removed from the cluster; the provider brings a new machine in its place; \
                     its pods are rescheduled onto the other nodes by the cluster's controllers; \
                     what they kept only on that machine (emptyDir, local volumes) stays behind."
                )}</p>
                <p class="muted">"KQueen asks the cluster first: a node that is Ready again is left alone."</p>
                <ActionForm action=replace attr:id="replace-form">
                    <input type="hidden" name="id" value=cluster_id />
                    <input type="hidden" name="node" value=name.clone() />
                    <button type="submit" class="danger" id="replace-submit">{format!("Replace node {name}")}</button>
                </ActionForm>
            </ConfirmStep>
        })
    }
}
