//! `/approvals`: the requests waiting for a second person in the caller's tenants (operators:
//! every tenant), each with its cluster and the decision forms where the caller may decide.

use leptos::prelude::*;
use leptos_meta::Title;

use super::section::{ApprovalWrites, Row};
use crate::components::{ErrorNote, FormError, TableHead};

#[component]
pub fn PendingApprovals() -> impl IntoView {
    let writes = ApprovalWrites::new();
    let list = crate::hydrated::resource(
        move || writes.version(),
        |_| super::sfn::pending_approvals(),
    );
    view! {
        <Title text="Approvals" />
        <div class="page-head"><h1>"Approvals"</h1></div>
        <p class="muted">"Deleting a production cluster, restoring a backup over it and taking its production mark off wait here for a second operator or tenant admin. A request expires after 24 hours."</p>
        <FormError />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Ok(p) if p.rows.is_empty() => view! { <p id="no-approvals">"Nothing waits for approval."</p> }.into_any(),
                    Ok(p) => {
                        let me = p.me.clone();
                        view! {
                            <div class="table-scroll">
                                <table class="table" id="approval-list">
                                    <TableHead cols=vec!["Request", "Asked", "State", ""] />
                                    <tbody>
                                        {p.rows.into_iter().map(|row| {
                                            let cluster_id = row.approval.cluster_id.clone();
                                            view! { <Row row me=me.clone() cluster_id back=Some("/approvals".to_owned()) writes with_cluster=true /> }
                                        }).collect_view()}
                                    </tbody>
                                </table>
                            </div>
                        }.into_any()
                    }
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
