//! The cluster page's "Production and approvals" section: whether the cluster is production
//! (with the button that marks it, for tenant admins and operators), and its requests for a
//! second person's approval with what each became; a pending one is approved or refused by
//! a second operator or tenant admin, or withdrawn by the one who asked. The request forms
//! are the cluster page's confirmation steps ([`RequestStep`]).

use leptos::prelude::*;

use super::actions::{ApproveRequest, RefuseRequest, RequestApproval, SetProduction};
use super::dto::{ApprovalRow, ApprovalsDto};
use crate::components::{ConfirmStep, TableHead};
use crate::time::to_minute;

/// The approvals' writes on a page; the page reads itself again when one finishes.
#[derive(Clone, Copy)]
pub struct ApprovalWrites {
    pub production: ServerAction<SetProduction>,
    pub request: ServerAction<RequestApproval>,
    pub approve: ServerAction<ApproveRequest>,
    pub refuse: ServerAction<RefuseRequest>,
}

impl ApprovalWrites {
    pub fn new() -> Self {
        Self {
            production: ServerAction::new(),
            request: ServerAction::new(),
            approve: ServerAction::new(),
            refuse: ServerAction::new(),
        }
    }

    /// Changes whenever one of them finishes.
    pub fn version(&self) -> usize {
        self.production.version().get()
            + self.request.version().get()
            + self.approve.version().get()
            + self.refuse.version().get()
    }
}

impl Default for ApprovalWrites {
    fn default() -> Self {
        Self::new()
    }
}

#[component]
pub fn ClusterApprovals(
    cluster_id: String,
    production: bool,
    approvals: ApprovalsDto,
    writes: ApprovalWrites,
) -> impl IntoView {
    let base = format!("/clusters/{cluster_id}");
    let shown = production || approvals.can_mark || !approvals.rows.is_empty();
    let status = if production {
        "This cluster is production: deleting it, restoring a backup over it and taking this mark off need a second person's approval (an operator or a tenant admin other than the one who asks). Its time-to-live does not delete it."
    } else {
        "Not production. Marked production, deleting this cluster or restoring a backup over it waits for a second operator or tenant admin to approve."
    };
    let me = approvals.me.clone();
    let form_id = cluster_id.clone();
    shown.then(|| view! {
        <section class="card" aria-labelledby="approvals-heading" id="approvals" data-production=production.to_string()>
            <div class="card-head"><h2 id="approvals-heading">"Production and approvals"</h2></div>
            <p id="production-status">{status}</p>
            {(approvals.can_mark && !production).then(|| view! {
                <ActionForm action=writes.production attr:class="inline-form" attr:id="production-form">
                    <input type="hidden" name="id" value=form_id />
                    <input type="hidden" name="production" value="true" />
                    <button type="submit" id="mark-production">"Mark as production"</button>
                </ActionForm>
            })}
            {(approvals.can_mark && production).then(|| view! {
                <p><a href=format!("{base}?confirm=unprotect") id="unprotect-link">"Ask to take the production mark off…"</a></p>
            })}
            {(!approvals.rows.is_empty()).then(|| view! {
                <div class="table-scroll">
                    <table class="table" id="approval-list">
                        <TableHead cols=vec!["Request", "Asked", "State", ""] />
                        <tbody>
                            {approvals.rows.into_iter().map(|row| view! {
                                <Row row me=me.clone() cluster_id=cluster_id.clone() back=None writes />
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            })}
        </section>
    })
}

/// One request, with the decision forms when it waits.
#[component]
pub fn Row(
    row: ApprovalRow,
    me: String,
    cluster_id: String,
    /// The page a decision comes back to (None: the cluster's).
    back: Option<String>,
    writes: ApprovalWrites,
    /// Name the cluster in the first cell (the approvals page).
    #[prop(optional)]
    with_cluster: bool,
) -> impl IntoView {
    let a = row.approval;
    let pending = a.state == "pending";
    let mine = a.requested_by == me;
    let what = super::action_label(&a.action);
    let detail = a.backup.as_ref().map(|b| {
        let scope = if a.namespaces.is_empty() {
            "everything".to_owned()
        } else {
            a.namespaces.join(", ")
        };
        format!("backup {b} ({scope})")
    });
    let state = match (a.state.as_str(), &a.decided_by) {
        ("pending", _) => format!("waiting, expires {} UTC", to_minute(&a.expires_at)),
        ("approved", Some(by)) => format!("approved by {by}"),
        ("failed", Some(by)) => format!("approved by {by}; could not run"),
        ("refused", Some(by)) => format!("refused by {by}"),
        ("withdrawn", _) => "withdrawn".to_owned(),
        ("expired", _) => "expired (nobody decided in time)".to_owned(),
        (other, _) => other.to_owned(),
    };
    let decide = pending && row.can_decide && !mine;
    let (id_a, id_r) = (a.id.clone(), a.id.clone());
    let reason_id = format!("refuse-reason-{}", a.id);
    let (c_a, c_r) = (cluster_id.clone(), cluster_id.clone());
    let (b_a, b_r) = (back.clone(), back);
    view! {
        <tr data-approval=a.id.clone() data-action=a.action.clone() data-state=a.state.clone()>
            <td>
                {with_cluster.then(|| view! { <a href=format!("/clusters/{cluster_id}")>{a.cluster.clone()}</a> ": " })}
                {what}
                {detail.map(|d| view! { <br /><small class="muted">{d}</small> })}
            </td>
            <td>
                {format!("{} UTC by {}", to_minute(&a.requested_at), a.requested_by)}
                {(!a.reason.is_empty()).then(|| view! { <br /><small>{format!("“{}”", a.reason)}</small> })}
            </td>
            <td class="approval-state">
                {state}
                {a.note.clone().map(|n| view! { <br /><small>{n}</small> })}
            </td>
            <td>
                {decide.then(|| view! {
                    <ActionForm action=writes.approve attr:class="inline-form approve-form">
                        <input type="hidden" name="id" value=c_a />
                        <input type="hidden" name="approval" value=id_a />
                        {b_a.map(|b| view! { <input type="hidden" name="back" value=b /> })}
                        <button type="submit" class="approve">"Approve"</button>
                    </ActionForm>
                })}
                {(pending && (decide || mine)).then(|| view! {
                    <ActionForm action=writes.refuse attr:class="inline-form refuse-form">
                        <input type="hidden" name="id" value=c_r />
                        <input type="hidden" name="approval" value=id_r />
                        {b_r.map(|b| view! { <input type="hidden" name="back" value=b /> })}
                        {(!mine).then(|| view! {
                            <label class="visually-hidden" for=reason_id.clone()>"Why"</label>
                            <input name="reason" id=reason_id maxlength="500" placeholder="why (optional)" />
                        })}
                        <button type="submit" class="refuse danger">{if mine { "Withdraw" } else { "Refuse" }}</button>
                    </ActionForm>
                })}
                {(pending && mine).then(|| view! { <small class="muted">"A second operator or tenant admin approves it."</small> })}
            </td>
        </tr>
    }
}

/// The confirmation step of a request (`?confirm=delete` on a production cluster, or
/// `?confirm=unprotect`): what it asks, why, and the button that asks.
#[component]
pub fn RequestStep(
    id: String,
    name: String,
    /// `delete` or `unprotect`.
    action: &'static str,
    writes: ApprovalWrites,
) -> impl IntoView {
    let cancel = format!("/clusters/{id}");
    let (title, text, button) = match action {
        "delete" => (
            format!("Ask to delete cluster {name}?"),
            "This cluster is production: deleting it needs a second person's approval. Your request waits 24 hours for an operator or a tenant admin other than you; once approved, the cluster is deleted at once.",
            "Request deletion",
        ),
        _ => (
            format!("Ask to take the production mark off {name}?"),
            "Once a second operator or tenant admin approves, deletes and restores over this cluster no longer wait for approval.",
            "Request to unmark",
        ),
    };
    view! {
        <ConfirmStep id="confirm-request" title=title cancel>
            <p>{text}</p>
            <ActionForm action=writes.request attr:class="stack" attr:id="request-form">
                <input type="hidden" name="id" value=id />
                <input type="hidden" name="action" value=action />
                <div class="field">
                    <label for="request-reason">"Why (shown to the approver)"</label>
                    <input id="request-reason" name="reason" maxlength="500" autocomplete="off" />
                </div>
                <button type="submit" class="danger" id="request-submit">{button}</button>
            </ActionForm>
        </ConfirmStep>
    }
}
