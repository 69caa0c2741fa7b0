//! `/clusters/:id/apps/preview`: what the previewed deploy would do, object by object
//! (created; changed, with each field before and after; unchanged; pruned), whose rights it
//! uses, and the "Deploy" button.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::apps::actions::DeployApp;
use crate::apps::dto::PreviewPageDto;
use crate::components::{ErrorNote, FormError, TableHead};
use kqueen_dto::apps::{DeployPreview, ObjectDiff};

#[component]
pub fn AppPreview() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let deploy = ServerAction::<DeployApp>::new();
    let page = crate::hydrated::resource(id, crate::apps::sfn::app_preview_page);
    view! {
        <Title text="Preview of a deploy" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <Preview page=p deploy /> }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <h1>"Preview"</h1> <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn Preview(page: PreviewPageDto, deploy: ServerAction<DeployApp>) -> impl IntoView {
    let form = format!("/clusters/{}/apps/new", page.cluster_id);
    let Some(p) = page.preview else {
        return view! {
            <h1>"Preview"</h1>
            <p class="empty" id="app-no-preview">"Nothing is previewed for this cluster (or your session ended). "
                <a href=form>"Preview a deploy"</a></p>
        }
        .into_any();
    };
    let counts = summary(&p);
    view! {
        <div class="page-head">
            <h1>{format!("Deploy {} {}", p.name, p.version)}</h1>
            <span class="muted">"into cluster " <a href=format!("/clusters/{}", page.cluster_id)>{page.cluster_name.clone()}</a></span>
        </div>
        <FormError />
        <section class="card" aria-labelledby="app-diff-heading">
            <div class="card-head"><h2 id="app-diff-heading">"What the deploy changes"</h2></div>
            <dl class="facts">
                <dt>"Namespace"</dt>
                <dd id="app-preview-namespace"><code>{p.namespace.clone()}</code>
                    {(!p.namespace_exists).then(|| view! {
                        " " <span class="badge app-new-namespace" id="app-namespace-new">"new: the deploy makes it"</span>
                    })}
                </dd>
                <dt>"Applied as"</dt><dd id="app-applied-as">{p.applied_as.clone()}</dd>
                <dt>"Objects"</dt><dd id="app-summary">{counts}</dd>
            </dl>
            {(!p.namespace_exists).then(|| view! {
                <p class="muted" id="app-namespace-note">"The namespace does not exist yet: the cluster checked each object as far as it can without it, and checks them fully when the deploy makes it."</p>
            })}
            <div class="table-scroll">
                <table class="table" id="app-diff">
                    <TableHead cols=vec!["Object", "Change"] />
                    <tbody>
                        {p.objects.iter().cloned().map(|o| view! { <DiffRow object=o /> }).collect_view()}
                    </tbody>
                </table>
            </div>
            <ActionForm action=deploy attr:class="filter" attr:id="app-deploy-form">
                <input type="hidden" name="id" value=page.cluster_id.clone() />
                <button type="submit" id="app-deploy">"Deploy"</button>
                <a href=form.clone() id="app-edit">"Change the request"</a>
            </ActionForm>
        </section>
    }
    .into_any()
}

/// One object's row: `data-change` is `created`, `changed`, `unchanged` or `pruned`;
/// a change lists its fields in a table of its own.
#[component]
fn DiffRow(object: ObjectDiff) -> impl IntoView {
    let what = match &object.namespace {
        Some(ns) => format!("{} {}/{}", object.kind, ns, object.name),
        None => format!("{} {}", object.kind, object.name),
    };
    let label = match object.change.as_str() {
        "created" => "created",
        "changed" => "changed",
        "unchanged" => "unchanged",
        "pruned" => "pruned (no longer in the manifests: deleted)",
        _ => "unknown",
    };
    let fields = object.fields.clone();
    view! {
        <tr data-kind=object.kind.clone() data-name=object.name.clone() data-change=object.change.clone()>
            <td><code>{what}</code></td>
            <td>
                <span class=format!("badge app-change-{}", object.change)>{label}</span>
                {(!fields.is_empty()).then(|| view! {
                    <table class="table app-fields">
                        <TableHead cols=vec!["Field", "Before", "After"] />
                        <tbody>
                            {fields.into_iter().map(|f| {
                                let path = f.path.clone();
                                view! {
                                <tr data-path=path>
                                    <td><code>{f.path}</code></td>
                                    <td class="app-before">{f.before.unwrap_or_else(|| "(none)".into())}</td>
                                    <td class="app-after">{f.after.unwrap_or_else(|| "(removed)".into())}</td>
                                </tr>
                            }}).collect_view()}
                        </tbody>
                    </table>
                })}
            </td>
        </tr>
    }
}

/// "3 created, 1 changed, 2 unchanged".
fn summary(p: &DeployPreview) -> String {
    let count = |c: &str| p.objects.iter().filter(|o| o.change == c).count();
    let parts: Vec<String> = ["created", "changed", "unchanged", "pruned"]
        .into_iter()
        .map(|c| (c, count(c)))
        .filter(|(_, n)| *n > 0)
        .map(|(c, n)| format!("{n} {c}"))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}
