//! `/clusters` (list), `/clusters/new` (request form rendered from the template's schema) and
//! `/clusters/:id` (state, live progress, steps and timeline, kubeconfig, delete, scale).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::clusters::actions::{
    DeleteCluster, RequestCluster, RevokeAccess, ScaleCluster, UpgradeCluster,
};
use crate::clusters::dto::{ClusterPageDto, ClustersPageDto, NewClusterPageDto, ParamDto};
use crate::components::{encode_query_value, ErrorNote, FormError, TableHead};
use crate::fleet::actions::SyncInventory;
use crate::fleet::inventory::Inventory;

fn query(key: &'static str) -> impl Fn() -> Option<String> + Copy + Send + Sync {
    let q = use_query_map();
    move || q.read().get(key).filter(|v| !v.is_empty())
}

#[component]
pub fn Clusters() -> impl IntoView {
    let (tenant, state, name, offset) = (
        query("tenant"),
        query("state"),
        query("name"),
        query("offset"),
    );
    let page = Resource::new(
        move || {
            (
                tenant(),
                state(),
                name(),
                offset().and_then(|o| o.parse().ok()),
            )
        },
        |(t, s, n, o)| crate::clusters::sfn::clusters_page(t, s, n, o),
    );
    view! {
        <Title text="Clusters" />
        <div class="page-head">
            <h1>"Clusters"</h1>
            <a class="button" href="/clusters/new" id="request-cluster">"Request a cluster"</a>
        </div>
        <Transition fallback=|| view! { <p class="muted">"Loading clusters…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <ClusterList page=p tenant=tenant() state=state() name=name() /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn ClusterList(
    page: ClustersPageDto,
    tenant: Option<String>,
    state: Option<String>,
    name: Option<String>,
) -> impl IntoView {
    let filter_query = format!(
        "tenant={}&state={}&name={}",
        encode_query_value(tenant.as_deref().unwrap_or("")),
        encode_query_value(state.as_deref().unwrap_or("")),
        encode_query_value(name.as_deref().unwrap_or(""))
    );
    let older = (u64::from(page.offset + page.limit) < page.total).then(|| {
        format!(
            "/clusters?{filter_query}&offset={}",
            page.offset + page.limit
        )
    });
    let newer = (page.offset > 0).then(|| {
        format!(
            "/clusters?{filter_query}&offset={}",
            page.offset.saturating_sub(page.limit)
        )
    });
    let shown = page.clusters.len();
    view! {
        <section class="card" aria-labelledby="clusters-heading">
            <div class="card-head"><h2 id="clusters-heading">{format!("{} cluster(s)", page.total)}</h2></div>
            <form method="get" action="/clusters" class="filter wrap" id="cluster-filter">
                <label for="f-tenant">"Tenant"</label>
                <select id="f-tenant" name="tenant">
                    <option value="">"All"</option>
                    {page.tenants.iter().map(|t| {
                        let selected = tenant.as_deref() == Some(t.as_str());
                        view! { <option value=t.clone() selected=selected>{t.clone()}</option> }
                    }).collect_view()}
                </select>
                <label for="f-state">"State"</label>
                <select id="f-state" name="state">
                    <option value="">"Any"</option>
                    {page.states.iter().map(|(v, l)| {
                        let selected = state.as_deref() == Some(v.as_str());
                        view! { <option value=v.clone() selected=selected>{l.clone()}</option> }
                    }).collect_view()}
                </select>
                <label for="f-name">"Name"</label>
                <input id="f-name" name="name" value=name.clone().unwrap_or_default() placeholder="contains…" />
                <button type="submit">"Filter"</button>
            </form>
            {if shown == 0 {
                view! { <p class="empty">"No clusters yet. Request one from a template."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="cluster-table">
                        <caption class="visually-hidden">"Clusters"</caption>
                        <TableHead cols=vec!["Name", "Tenant", "State", "Template", "Nodes", "Created", "Expires"] />
                        <tbody>
                            {page.clusters.into_iter().map(|c| view! {
                                <tr data-cluster=c.name.clone()>
                                    <td><a href=format!("/clusters/{}", c.id)>{c.name.clone()}</a></td>
                                    <td>{c.tenant}</td>
                                    <td><StateBadge state=c.state label=c.state_label /></td>
                                    <td>{c.template}" "<span class="muted">"("{c.kind}")"</span></td>
                                    <td>{c.node_count}</td>
                                    <td>{c.created}</td>
                                    <td>{c.expires.unwrap_or_else(|| "never".into())}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
            <nav class="pager" aria-label="Pages">
                {newer.map(|h| view! { <a href=h>"← Previous"</a> })}
                {older.map(|h| view! { <a href=h>"Next →"</a> })}
            </nav>
        </section>
    }
}

#[component]
fn StateBadge(state: String, label: String) -> impl IntoView {
    view! { <span class=format!("badge state-{state}") data-state=state.clone()>{label}</span> }
}

#[component]
pub fn NewCluster() -> impl IntoView {
    let (tenant, template) = (query("tenant"), query("template"));
    let page = Resource::new(
        move || (tenant(), template()),
        |(t, tpl)| crate::clusters::sfn::new_cluster_page(t, tpl),
    );
    view! {
        <Title text="Request a cluster" />
        <h1>"Request a cluster"</h1>
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <RequestForm page=p /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn RequestForm(page: NewClusterPageDto) -> impl IntoView {
    let q = use_query_map();
    let request = ServerAction::<RequestCluster>::new();
    let tenant = page.tenant.clone().unwrap_or_default();
    let chosen = page
        .template
        .as_ref()
        .map(|t| t.name.clone())
        .unwrap_or_default();
    let no_templates = page.tenant.is_some() && page.templates.is_empty();
    view! {
        <section class="card" aria-labelledby="choose-heading">
            <div class="card-head"><h2 id="choose-heading">"1. Tenant and template"</h2></div>
            <form method="get" action="/clusters/new" class="filter wrap" id="choose-template">
                <label for="r-tenant">"Tenant"</label>
                <select id="r-tenant" name="tenant" required>
                    {page.tenants.iter().map(|t| {
                        let selected = *t == tenant;
                        view! { <option value=t.clone() selected=selected>{t.clone()}</option> }
                    }).collect_view()}
                </select>
                <label for="r-template">"Template"</label>
                <select id="r-template" name="template">
                    <option value="">"Choose…"</option>
                    {page.templates.iter().map(|t| {
                        let selected = t.name == chosen;
                        let label = if t.description.is_empty() { t.name.clone() } else { format!("{} — {}", t.name, t.description) };
                        view! { <option value=t.name.clone() selected=selected>{label}</option> }
                    }).collect_view()}
                </select>
                <button type="submit">"Show the form"</button>
            </form>
            {page.quota.clone().map(|q| view! { <p class="muted" id="quota-note">"Quota of " {tenant.clone()} ": " {q}</p> })}
            {no_templates.then(|| view! { <p class="empty">"No template is offered to this tenant. Ask an operator."</p> })}
        </section>
        {page.template.clone().map(|t| {
            let fixed = page.fixed.clone();
            let params = page.params.clone();
            view! {
                <section class="card" aria-labelledby="params-heading">
                    <div class="card-head"><h2 id="params-heading">{format!("2. Parameters of {}", t.name)}</h2></div>
                    <p class="muted">{format!("Provisioner: {} ({})", t.provider, t.kind)}</p>
                    <FormError />
                    <ActionForm action=request attr:class="stack" attr:id="request-form">
                        <input type="hidden" name="tenant" value=tenant.clone() />
                        <input type="hidden" name="template" value=t.name.clone() />
                        <div class="field">
                            <label for="p-name">"Cluster name"</label>
                            <input id="p-name" name="name" required maxlength="63" pattern="[a-z0-9]([a-z0-9\\-]*[a-z0-9])?"
                                value=q.read_untracked().get("name").unwrap_or_default()
                                aria-describedby="p-name-help" />
                            <small id="p-name-help" class="muted">"Lowercase letters, digits and '-', unique in the tenant."</small>
                        </div>
                        {params.into_iter().map(|p| {
                            let prefill = if p.secret { None } else { q.read_untracked().get(&format!("p.{}", p.name)) };
                            view! { <ParamField param=p prefix="p" value=prefill /> }
                        }).collect_view()}
                        {(!fixed.is_empty()).then(|| view! {
                            <p class="muted">"Set by the template: "
                                {fixed.iter().map(|(k, v)| format!("{k} = {v}")).collect::<Vec<_>>().join(", ")}
                            </p>
                        })}
                        <button type="submit" id="request-submit">"Request cluster"</button>
                    </ActionForm>
                </section>
            }
        })}
    }
}

/// One input rendered from a schema parameter. Field names are `<prefix>[<param name>]`; a
/// checkbox also sends `<prefix>_shown[<param name>]`, so that an unchecked one counts as
/// `false` ([`crate::clusters::actions::form_params`]).
#[component]
pub fn ParamField(param: ParamDto, prefix: &'static str, value: Option<String>) -> impl IntoView {
    let id = format!("f-{}", param.name);
    let name = format!("{prefix}[{}]", param.name);
    let shown = format!("{prefix}_shown[{}]", param.name);
    let help_id = format!("{id}-help");
    let value = value.or(param.default.clone()).unwrap_or_default();
    let mut help = param.help.clone().unwrap_or_default();
    if let (Some(lo), Some(hi)) = (param.min, param.max) {
        help = format!("{help} ({lo}–{hi})").trim().to_owned();
    }
    if param.secret {
        help = format!("{help} Stored encrypted; never shown again.")
            .trim()
            .to_owned();
    }
    let input = match param.kind.as_str() {
        "integer" => view! {
            <input type="number" id=id.clone() name=name.clone() value=value required=param.required
                min=param.min.map(|m| m.to_string()) max=param.max.map(|m| m.to_string())
                aria-describedby=help_id.clone() />
        }.into_any(),
        "boolean" => {
            let checked = value == "true";
            view! {
                <input type="hidden" name=shown value="1" />
                <input type="checkbox" id=id.clone() name=name.clone() value="true" checked=checked aria-describedby=help_id.clone() />
            }.into_any()
        }
        "enum" => view! {
            <select id=id.clone() name=name.clone() aria-describedby=help_id.clone()>
                {param.options.iter().map(|o| {
                    let selected = *o == value;
                    view! { <option value=o.clone() selected=selected>{o.clone()}</option> }
                }).collect_view()}
            </select>
        }.into_any(),
        "text" => view! {
            <textarea id=id.clone() name=name.clone() rows="8" required=param.required
                aria-describedby=help_id.clone() spellcheck="false">{value}</textarea>
        }.into_any(),
        _ => view! {
            <input type=if param.secret { "password" } else { "text" } id=id.clone() name=name.clone()
                value=value required=param.required maxlength=param.max_len.map(|m| m.to_string())
                autocomplete="off" aria-describedby=help_id.clone() />
        }.into_any(),
    };
    view! {
        <div class="field" data-param=param.name.clone()>
            <label for=id>{param.label.clone()}{param.required.then_some(" *")}</label>
            {input}
            <small id=help_id class="muted">{help}</small>
        </div>
    }
}

#[component]
pub fn ClusterView() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    // Bumped every 2 s while an operation runs (in the browser, once hydrated).
    let tick = RwSignal::new(0u32);
    let writes = ClusterWrites::new();
    let page = Resource::new(
        move || (id(), tick.get(), writes.version()),
        |(id, _, _)| crate::clusters::sfn::cluster_page(id),
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
                    Ok(p) => {
                        busy.set(p.busy);
                        view! { <Cluster page=p writes /> }.into_any()
                    }
                    Err(e) => view! { <Title text="Cluster" /> <h1>"Cluster"</h1> <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn Cluster(page: ClusterPageDto, writes: ClusterWrites) -> impl IntoView {
    let id = page.cluster.id.clone();
    let [id_revoke, id_scale, id_upgrade, id_delete] = [(); 4].map(|()| id.clone());
    let c = page.cluster.clone();
    let base = format!("/clusters/{}", c.id);
    let op = page.operations.first().cloned();
    let steps: Vec<_> = page
        .events
        .iter()
        .filter(|e| e.kind == "step")
        .cloned()
        .collect();
    let ready = c.state == "ready" || c.state == "updating";
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
            <h1>{c.name.clone()} " " <StateBadge state=c.state.clone() label=c.state_label.clone() /></h1>
            <span class="muted">{format!("tenant {}", c.tenant)}</span>
        </div>
        <FormError />
        {page.error.clone().map(|e| view! { <p class="error" role="alert" id="cluster-error">{e}</p> })}
        {op.clone().filter(|_| page.busy).map(|o| view! {
            <section class="card" aria-labelledby="progress-heading" id="progress">
                <div class="card-head"><h2 id="progress-heading">{format!("{} in progress", capitalize(&o.kind))}</h2></div>
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
                    <dt>"Tenant admins' access"</dt><dd id="cluster-admin-access" data-access=page.admin_access.0.clone()>{page.admin_access.1.clone()}</dd>
                    <dt>"Nodes"</dt><dd>{c.node_count}</dd>
                    <dt>"Created"</dt><dd>{format!("{} by {}", c.created, page.created_by)}</dd>
                    <dt>"Time-to-live"</dt><dd id="expires">{c.expires.clone().map_or_else(|| "none".to_owned(), |e| format!("deleted automatically at {e}"))}</dd>
                    {page.parameters.iter().map(|(k, v)| view! { <dt>{k.clone()}</dt><dd>{v.clone()}</dd> }).collect_view()}
                </dl>
            </section>
            <section class="card" aria-labelledby="actions-heading">
                <div class="card-head"><h2 id="actions-heading">"Access and actions"</h2></div>
                {if ready {
                    view! {
                        <p><a class="button" rel="external" href=format!("{base}/kubeconfig") id="kubeconfig-download">{kubeconfig_label}</a></p>
                        <p class="muted">{kubeconfig_help}</p>
                        {(!page.admin_kubeconfig).then(|| view! {
                            <ActionForm action=writes.revoke>
                                <input type="hidden" name="id" value=id_revoke />
                                <button type="submit" class="link-button" id="revoke-access">"Revoke my access"</button>
                            </ActionForm>
                        })}
                    }.into_any()
                } else {
                    view! { <p class="muted">"Kubeconfigs are available once the cluster is Ready."</p> }.into_any()
                }}
                {page.node_range.filter(|_| page.can_manage && page.capabilities.scale && ready).map(|(min, max)| view! {
                    <ActionForm action=writes.scale attr:class="filter" attr:id="scale-form">
                        <input type="hidden" name="id" value=id_scale />
                        <label for="scale-nodes">{format!("Nodes ({min}–{max})")}</label>
                        <input type="number" id="scale-nodes" name="node_count" min=min.to_string() max=max.to_string() value=c.node_count.to_string() required />
                        <button type="submit">"Scale"</button>
                    </ActionForm>
                })}
                {(page.can_manage && page.capabilities.upgrade && ready).then(|| {
                    let current = page.parameters.iter().find(|(k, _)| k == "kubernetes_version").map(|(_, v)| v.clone()).unwrap_or_default();
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
                {(page.can_manage && c.state != "deleting").then(|| view! {
                    <ActionForm action=writes.delete attr:id="delete-form">
                        <input type="hidden" name="id" value=id_delete />
                        <p class="muted">{if page.capabilities.deletes_infrastructure {
                            "Deleting runs the provisioner's delete: the cluster's machines are removed."
                        } else {
                            "Deleting makes KQueen forget this cluster; nothing is removed from it."
                        }}</p>
                        <button type="submit" class="danger" id="delete-cluster">"Delete cluster"</button>
                    </ActionForm>
                })}
            </section>
        </div>
        {page.inventory.clone().map(|inv| view! {
            <Inventory inventory=inv cluster_id=c.id.clone() can_sync=page.can_manage && c.state == "ready" sync=writes.sync />
        })}
        <section class="card" aria-labelledby="steps-heading">
            <div class="card-head"><h2 id="steps-heading">"Steps"</h2></div>
            <ol class="steps" id="step-list">
                {steps.into_iter().map(|s| view! { <li><time>{s.time}</time> " " {s.message}</li> }).collect_view()}
            </ol>
        </section>
        <section class="card" aria-labelledby="timeline-heading">
            <div class="card-head"><h2 id="timeline-heading">"Timeline"</h2></div>
            <ol class="timeline" id="timeline">
                {page.events.into_iter().map(|e| view! {
                    <li class=format!("event-{}", e.kind) data-kind=e.kind.clone()><time>{e.time}</time> " " <span>{e.message}</span></li>
                }).collect_view()}
            </ol>
        </section>
        <section class="card" aria-labelledby="ops-heading">
            <div class="card-head"><h2 id="ops-heading">"Operations"</h2></div>
            <table class="table" id="operations">
                <TableHead cols=vec!["Operation", "State", "Progress", "Attempts", "Requested", "Finished"] />
                <tbody>
                    {page.operations.into_iter().map(|o| view! {
                        <tr>
                            <td>{o.kind}</td>
                            <td>{o.state}{o.error.map(|e| view! { <br /><small class="error-text">{e}</small> })}</td>
                            <td>{format!("{}%", o.progress)}</td>
                            <td>{o.attempts}</td>
                            <td>{format!("{} by {}", o.created, o.requested_by)}</td>
                            <td>{o.finished.unwrap_or_default()}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
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
}

impl ClusterWrites {
    fn new() -> Self {
        Self {
            delete: ServerAction::new(),
            scale: ServerAction::new(),
            upgrade: ServerAction::new(),
            revoke: ServerAction::new(),
            sync: ServerAction::new(),
        }
    }

    /// Changes whenever one of them finishes.
    fn version(&self) -> usize {
        self.delete.version().get()
            + self.scale.version().get()
            + self.upgrade.version().get()
            + self.revoke.version().get()
            + self.sync.version().get()
    }
}
