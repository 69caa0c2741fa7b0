//! `/clusters/:id/backups/:backup/restore` and `/backups/:backup/restore` (a backup found by
//! its id: its cluster may have been deleted): restoring a backup. The form picks the cluster
//! to restore into (its own while it lives, or another the caller may restore into) and, optionally, some
//! of the backup's namespaces; "Preview" shows each object's fate (to create, already there
//! and equal, already there and different, cannot be restored and why), asked of that
//! cluster; "Restore" queues it and leads to that cluster's page, where it runs. Into a
//! production cluster, the restore is asked for instead and runs once a second person
//! approves it there.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};

use crate::backups::actions::RestoreBackup;
use crate::backups::dto::RestorePageDto;
use crate::components::{ErrorNote, FormError, TableHead};
use kqueen_dto::backups::{RestoreItem, RestorePlan};

#[component]
pub fn BackupRestore() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let restore = ServerAction::<RestoreBackup>::new();
    let page = crate::hydrated::resource(
        move || {
            let p = params.read();
            let q = query.read();
            (
                p.get("id"),
                p.get("backup").unwrap_or_default(),
                q.get("target"),
                q.get_all("ns").filter(|ns| !ns.is_empty()),
                q.get("plan").is_some(),
            )
        },
        |(id, backup, target, ns, plan)| {
            crate::backups::sfn::restore_page(id, backup, target, ns, plan)
        },
    );
    view! {
        <Title text="Restore a backup" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <RestoreForm page=p restore /> }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <h1>"Restore a backup"</h1> <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn RestoreForm(page: RestorePageDto, restore: ServerAction<RestoreBackup>) -> impl IntoView {
    let p = page;
    let (back, back_label) = match &p.cluster_id {
        Some(id) => (format!("/clusters/{id}"), "back to the cluster"),
        None => ("/backups".to_owned(), "back to the backups"),
    };
    let chosen = p
        .plan
        .as_ref()
        .map(|plan| plan.target_cluster.clone())
        .or_else(|| p.cluster_id.clone())
        .unwrap_or_default();
    let deleted = p.cluster_id.is_none().then(|| {
        view! { <p class="muted" id="restore-cluster-deleted">"The cluster this backup was taken of was deleted: restore it into another."</p> }
    });
    let picked: Vec<String> = p
        .plan
        .as_ref()
        .map(|pl| pl.namespaces.clone())
        .unwrap_or_default();
    let whole = p.backup.kind == "key_space";
    let namespaces = p
        .backup
        .contents
        .as_ref()
        .filter(|_| !whole)
        .map(|c| c.namespaces.clone())
        .unwrap_or_default();
    let taken = crate::time::to_minute(&p.backup.created_at);
    view! {
        <div class="page-head">
            <h1>"Restore a backup"</h1>
            <span class="muted">{format!("of cluster {}, taken {taken} UTC", p.cluster_name)} " · " <a href=back>{back_label}</a></span>
        </div>
        {deleted}
        <FormError />
        <section class="card" aria-labelledby="restore-form-heading">
            <div class="card-head"><h2 id="restore-form-heading">"Where and what"</h2></div>
            <form method="get" class="stack" id="restore-form">
                <label for="restore-target">"Restore into"</label>
                <select id="restore-target" name="target" required>
                    {p.targets.iter().map(|(id, label)| view! {
                        <option value=id.clone() selected=*id == chosen>{label.clone()}</option>
                    }).collect_view()}
                </select>
                {whole.then(|| view! {
                    <p class="muted" id="restore-whole">"A key-space backup is restored whole, into a hosted cluster: its key space in the shared etcd then holds exactly the backup's keys, and its API server serves the backup's objects."</p>
                })}
                <fieldset hidden=whole>
                    <legend>"Namespaces (none checked: everything the backup holds)"</legend>
                    {namespaces.iter().map(|ns| {
                        let (input, label_for) = (format!("restore-ns-{ns}"), format!("restore-ns-{ns}"));
                        let checked = picked.contains(ns);
                        view! {
                            <label class="check" for=label_for>
                                <input type="checkbox" name="ns" value=ns.clone() id=input checked=checked />
                                " " {ns.clone()}
                            </label>
                        }
                    }).collect_view()}
                </fieldset>
                <input type="hidden" name="plan" value="1" />
                <button type="submit" id="restore-preview">"Preview"</button>
            </form>
        </section>
        {p.plan_error.clone().map(|e| view! { <p class="error" role="alert" id="restore-plan-error">{e}</p> })}
        {p.plan.clone().map(|plan| view! { <Plan plan cluster_id=p.cluster_id.clone() backup_id=p.backup.id.clone() production=p.target_production restore /> })}
    }
}

/// Counts by fate, in words.
fn counts(items: &[RestoreItem]) -> String {
    let n = |fate: &str| items.iter().filter(|i| i.fate == fate).count();
    format!(
        "{} to create, {} already there and equal, {} already there and different (left as they are), {} cannot be restored",
        n("will-create"),
        n("unchanged"),
        n("differs"),
        n("cannot")
    )
}

#[component]
fn Plan(
    plan: RestorePlan,
    cluster_id: Option<String>,
    backup_id: String,
    production: bool,
    restore: ServerAction<RestoreBackup>,
) -> impl IntoView {
    let summary = match &plan.key_space {
        Some(k) => format!(
            "Key space: {} key(s) to write, {} already equal, {} to remove. The cluster's objects become the backup's; its other objects go.",
            k.written, k.unchanged, k.removed
        ),
        None => counts(&plan.items),
    };
    let whole = plan.key_space.is_some();
    let namespaces = plan.namespaces.join(",");
    let heading = format!("What a restore into {} does", plan.target_cluster_name);
    let target = plan.target_cluster.clone();
    view! {
        <section class="card" aria-labelledby="restore-plan-heading">
            <div class="card-head"><h2 id="restore-plan-heading">{heading}</h2></div>
            <p id="restore-summary">{summary}</p>
            <div class="table-scroll" hidden=whole>
                <table class="table" id="restore-plan">
                    <TableHead cols=vec!["Object", "Stage", "Fate"] />
                    <tbody>
                        {plan.items.into_iter().map(|i| {
                            let name = match &i.namespace { Some(ns) => format!("{ns}/{}", i.name), None => i.name.clone() };
                            let fate = match i.fate.as_str() {
                                "will-create" => "to create",
                                "unchanged" => "already there, equal",
                                "differs" => "already there, different: left as it is",
                                "cannot" => "cannot be restored",
                                other => other,
                            }
                            .to_owned();
                            view! {
                                <tr data-kind=i.kind.clone() data-name=name.clone() data-fate=i.fate.clone()>
                                    <td>{format!("{} {name}", i.kind)}<br /><small class="muted">{i.api_version.clone()}</small></td>
                                    <td>{i.stage.clone()}</td>
                                    <td>{fate}{i.reason.clone().map(|r| view! { <br /><small>{r}</small> })}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            <ActionForm action=restore attr:class="filter" attr:id="restore-run-form">
                {cluster_id.map(|id| view! { <input type="hidden" name="id" value=id /> })}
                <input type="hidden" name="backup" value=backup_id />
                <input type="hidden" name="target" value=target />
                <input type="hidden" name="namespaces" value=namespaces />
                {if production {
                    view! {
                        <p class="muted" id="restore-needs-approval">"This cluster is production: the restore is asked for first, and runs once an operator or tenant admin other than you approves it on the cluster's page."</p>
                        <div class="field">
                            <label for="restore-reason">"Why (shown to the approver)"</label>
                            <input id="restore-reason" name="reason" maxlength="500" />
                        </div>
                        <button type="submit" id="restore-run">"Request restore (needs approval)"</button>
                    }.into_any()
                } else {
                    view! { <button type="submit" id="restore-run">"Restore"</button> }.into_any()
                }}
            </ActionForm>
        </section>
    }
}
