//! `/clusters/:id/apps/:app`: one version — its state and last error, the objects it
//! applied, the rollout of its workloads, failing pods and the namespace's warnings, asked
//! of the cluster at each read; it follows a deploy or a removal by itself when hydrated.
//! Removing it is confirmed first (`?confirm=delete`).

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::apps::actions::DeleteApp;
use crate::apps::dto::AppPageDto;
use crate::apps::section::AppStateBadge;
use crate::components::{confirming, ConfirmStep, ErrorNote, FormError, TableHead};
use crate::time::to_minute;

#[component]
pub fn AppVersion() -> impl IntoView {
    let params = use_params_map();
    let ids = move || {
        let p = params.read();
        (
            p.get("id").unwrap_or_default(),
            p.get("app").unwrap_or_default(),
        )
    };
    // Bumped every 2 s while the version is being deployed or removed (hydrated only).
    let tick = RwSignal::new(0u32);
    let delete = ServerAction::<DeleteApp>::new();
    let page = crate::hydrated::resource(
        move || (ids(), tick.get(), delete.version().get()),
        |((id, app), _, _)| crate::apps::sfn::app_page(id, app),
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
                        view! { <Version page=p delete /> }.into_any()
                    }
                    Err(e) => {
                        busy.set(false);
                        crate::not_found::status_for(&e);
                        let cluster = format!("/clusters/{}", ids().0);
                        view! {
                            <Title text="Application" />
                            <h1>"Application"</h1>
                            <ErrorNote error=e />
                            <p id="app-gone">"A removed version is no longer listed. " <a href=cluster>"Back to the cluster"</a></p>
                        }.into_any()
                    }
                }
            })}
        </Transition>
    }
}

#[component]
fn Version(page: AppPageDto, delete: ServerAction<DeleteApp>) -> impl IntoView {
    let a = page.status.application.clone();
    let base = crate::apps::version_path(&page.cluster_id, &a.id);
    let cluster_link = format!("/clusters/{}", page.cluster_id);
    let can_delete = page.can_manage && a.state != "deleting";
    let confirm = confirming();
    let st = page.status.clone();
    let confirm_step = {
        let (id, app, name, cancel) = (
            page.cluster_id.clone(),
            a.id.clone(),
            format!("{} {}", a.name, a.version),
            base.clone(),
        );
        let namespace = a.namespace.clone();
        move || {
            let (id, app, name, cancel, namespace) = (
                id.clone(),
                app.clone(),
                name.clone(),
                cancel.clone(),
                namespace.clone(),
            );
            (can_delete && confirm.get().as_deref() == Some("delete")).then(|| view! {
                <ConfirmStep id="confirm-app-delete" title=format!("Delete {name}?") cancel=cancel>
                    <p>"Every object this version created is deleted, and its namespace "
                        <code>{namespace}</code> " when KQueen made it. This cannot be undone."</p>
                    <ActionForm action=delete attr:id="app-delete-form">
                        <input type="hidden" name="id" value=id />
                        <input type="hidden" name="app" value=app />
                        <button type="submit" class="danger" id="confirm-app-delete-submit">"Delete this version"</button>
                    </ActionForm>
                </ConfirmStep>
            })
        }
    };
    view! {
        <Title text=format!("{} {}", a.name, a.version) />
        <div class="page-head">
            <h1>{format!("{} {} ", a.name, a.version)} <AppStateBadge state=a.state.clone() /></h1>
            <span class="muted">"in cluster " <a href=cluster_link.clone() id="app-cluster">{page.cluster_name.clone()}</a></span>
        </div>
        <FormError />
        {confirm_step}
        {a.error.clone().map(|e| view! { <p class="error" role="alert" id="app-error">{e}</p> })}
        {page.operation.clone().filter(|_| page.busy).map(|o| view! {
            <section class="card" aria-labelledby="app-progress-heading" id="app-progress">
                <div class="card-head"><h2 id="app-progress-heading">{format!("{} in progress", crate::apps::operation_label(&o.kind))}</h2></div>
                <progress max="100" value=o.progress.to_string() aria-labelledby="app-progress-heading">{format!("{}%", o.progress)}</progress>
                <p><span>{format!("{}%", o.progress)}</span> " — " <span id="app-step">{o.step.clone()}</span></p>
                <p class="muted">"This page updates by itself; a reload shows the same state."</p>
            </section>
        })}
        <div class="grid-2">
            <section class="card" aria-labelledby="app-facts-heading">
                <div class="card-head"><h2 id="app-facts-heading">"Version"</h2></div>
                <dl class="facts">
                    <dt>"Namespace"</dt><dd id="app-namespace-value"><code>{a.namespace.clone()}</code></dd>
                    <dt>"Requested"</dt><dd>{format!("{} UTC by {}", to_minute(&a.created_at), a.requested_by)}</dd>
                    <dt>"Deployed"</dt><dd id="app-deployed-at">{a.deployed_at.as_deref().map(|t| format!("{} UTC", to_minute(t))).unwrap_or_else(|| "not yet".into())}</dd>
                    {page.operation.clone().map(|o| view! {
                        <dt>"Last operation"</dt>
                        <dd id="app-last-operation" data-state=o.state.clone()>{format!("{}: {}", crate::apps::operation_label(&o.kind), o.state)}
                            {o.error.map(|e| view! { <br /><small class="error-text">{e}</small> })}
                        </dd>
                    })}
                </dl>
            </section>
            <section class="card" aria-labelledby="app-objects-heading">
                <div class="card-head"><h2 id="app-objects-heading">"Objects applied"</h2></div>
                {if a.objects.is_empty() {
                    view! { <p class="empty">"None yet."</p> }.into_any()
                } else {
                    view! {
                        <ul class="app-objects" id="app-objects">
                            {a.objects.iter().map(|o| view! { <li><code>{o.clone()}</code></li> }).collect_view()}
                        </ul>
                    }.into_any()
                }}
            </section>
        </div>
        <section class="card" aria-labelledby="app-workloads-heading">
            <div class="card-head"><h2 id="app-workloads-heading">"Workloads"</h2></div>
            {st.unreachable.clone().map(|u| view! { <p class="error" role="alert" id="app-unreachable">{format!("The cluster could not be asked: {u}")}</p> })}
            {if st.workloads.is_empty() {
                view! { <p class="empty" id="app-no-workloads">"No Deployment, StatefulSet or DaemonSet."</p> }.into_any()
            } else {
                view! {
                    <div class="table-scroll">
                        <table class="table" id="app-workloads">
                            <TableHead cols=vec!["Kind", "Name", "Desired", "Updated", "Ready", "Available", "Rollout", "Reason"] />
                            <tbody>
                                {st.workloads.iter().cloned().map(|w| view! {
                                    <tr data-workload=w.name.clone() data-kind=w.kind.clone()>
                                        <td>{w.kind.clone()}</td>
                                        <td>{w.name.clone()}</td>
                                        <td>{w.desired}</td>
                                        <td>{w.updated}</td>
                                        <td>{w.ready}</td>
                                        <td>{w.available}</td>
                                        <td><span class=format!("badge app-rollout-{}", w.rollout) data-rollout=w.rollout.clone()>{rollout_label(&w.rollout)}</span></td>
                                        <td>{w.reason.unwrap_or_default()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
            {(!st.failing_pods.is_empty()).then(|| view! {
                <h3>"Failing pods"</h3>
                <ul id="app-failing-pods">
                    {st.failing_pods.iter().map(|p| view! { <li><code>{p.name.clone()}</code> ": " {p.reason.clone()}</li> }).collect_view()}
                </ul>
            })}
            {(!st.warnings.is_empty()).then(|| view! {
                <h3>"Warnings in the namespace"</h3>
                <ul id="app-warnings">
                    {st.warnings.iter().map(|w| view! {
                        <li><code>{w.object.clone()}</code> " " <strong>{w.reason.clone()}</strong> ": " {w.message.clone()}
                            {(w.count > 1).then(|| format!(" (×{})", w.count))}</li>
                    }).collect_view()}
                </ul>
            })}
        </section>
        {can_delete.then(|| view! {
            <section class="card" aria-labelledby="app-actions-heading">
                <div class="card-head"><h2 id="app-actions-heading">"Actions"</h2></div>
                <p><a href=format!("/clusters/{}/apps/new", page.cluster_id) id="app-redeploy">"Deploy another version (or this one again)"</a></p>
                <p><a class="button danger" href=format!("{base}?confirm=delete") id="app-delete">"Delete this version…"</a></p>
            </section>
        })}
        <p><a href=cluster_link>"Back to the cluster (timeline and operations)"</a></p>
    }
}

fn rollout_label(rollout: &str) -> &'static str {
    match rollout {
        "available" => "Available",
        "progressing" => "Progressing",
        "failed" => "Failed",
        _ => "Unknown",
    }
}
