//! `/backups`: every backup the caller manages (tenant admins: their tenants'; operators:
//! every tenant's), of live and deleted clusters, newest first, filtered by tenant. A deleted
//! cluster's backups are found and restored elsewhere here; any finished backup can be
//! downloaded or deleted.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::backups::actions::DeleteBackup;
use crate::backups::delete::{ConfirmDelete, DeleteLink};
use crate::backups::section::Contents;
use crate::backups::size_label;
use crate::components::{ErrorNote, FormError, TableHead, TenantFilter};
use crate::time::to_minute;
use kqueen_dto::backups::ListedBackup;

#[component]
pub fn AllBackups() -> impl IntoView {
    let query = use_query_map();
    let delete = ServerAction::<DeleteBackup>::new();
    let tenant = move || query.read().get("tenant").unwrap_or_default();
    let list = crate::hydrated::resource(
        move || (tenant(), delete.version().get()),
        |(t, _)| crate::backups::sfn::all_backups((!t.is_empty()).then_some(t)),
    );
    let refused = move || {
        delete
            .value()
            .get()
            .and_then(Result::err)
            .map(|e| view! { <ErrorNote error=e /> })
    };
    view! {
        <Title text="Backups" />
        <div class="page-head">
            <h1>"Backups"</h1>
            <span class="muted">"Of every cluster you back up, deleted ones too: a deleted cluster's backup is restored into another cluster from here."</span>
        </div>
        <FormError />
        {refused}
        <ConfirmDelete page="/backups".to_owned() cluster_id=None delete />
        <form method="get" class="filter" id="backup-filter">
            <TenantFilter tenants=None selected=tenant() />
            <button type="submit">"Filter"</button>
        </form>
        <Transition fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Ok(l) => view! { <Listed backups=l /> }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Transition>
    }
}

#[component]
fn Listed(backups: Vec<ListedBackup>) -> impl IntoView {
    if backups.is_empty() {
        return view! { <p class="empty" id="all-backups-empty">"No backups."</p> }.into_any();
    }
    view! {
        <div class="table-scroll">
            <table class="table" id="all-backups">
                <TableHead cols=vec!["Cluster", "Taken", "State", "Contents", "Size", ""] />
                <tbody>
                    {backups.into_iter().map(|l| view! { <Row listed=l /> }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}

#[component]
fn Row(listed: ListedBackup) -> impl IntoView {
    let b = listed.backup;
    let id = b.id.clone();
    let cluster = if listed.cluster_deleted {
        view! {
            {format!("{}/{}", listed.tenant, listed.cluster_name)}
            " " <span class="badge" data-deleted="">"deleted"</span>
        }
        .into_any()
    } else {
        let href = format!("/clusters/{}", b.cluster);
        view! { <a href=href>{format!("{}/{}", listed.tenant, listed.cluster_name)}</a> }.into_any()
    };
    let finished = b.contents.is_some().then(|| {
        let archive = format!("/backups/{id}/archive");
        let restore = format!("/backups/{id}/restore");
        view! {
            <a class="button" rel="external" href=archive download="" data-download=id.clone()>"Download"</a>
            " "
            <a class="button" href=restore data-restore=id.clone()>"Restore…"</a>
        }
    });
    let deletable = (b.state != "running")
        .then(|| view! { <DeleteLink page="/backups".to_owned() backup=id.clone() /> });
    let contents = match (&b.contents, &b.error) {
        (Some(c), _) => {
            view! { <Contents contents=c.clone() include_secrets=b.include_secrets /> }.into_any()
        }
        (None, Some(e)) => view! { <span class="error">{e.clone()}</span> }.into_any(),
        (None, None) => view! { <span class="muted">"Being taken…"</span> }.into_any(),
    };
    view! {
        <tr data-backup=id.clone() data-backup-state=b.state.clone() data-cluster-deleted=listed.cluster_deleted.to_string()>
            <td>{cluster}</td>
            <td>{format!("{} UTC", to_minute(&b.created_at))}<br /><small class="muted">{format!("by {}", b.requested_by)}</small></td>
            <td><span class=format!("badge backup-state-{}", b.state)>{b.state.clone()}</span></td>
            <td>{contents}</td>
            <td>{b.size_bytes.map(size_label).unwrap_or_else(|| "—".into())}</td>
            <td>{finished}{deletable}</td>
        </tr>
    }
}
