//! Deleting a backup, confirmed first as every destructive action of the portal is: the
//! "Delete" link adds `?confirm=delete-backup&name=<backup>` to the page, which then shows
//! what deleting it means and the button that does it.

use leptos::prelude::*;

use crate::backups::actions::DeleteBackup;
use crate::components::{confirming, confirming_name, ConfirmStep};

/// The "Delete" link of backup `backup` on page `page` (no query of its own).
#[component]
pub(super) fn DeleteLink(page: String, backup: String) -> impl IntoView {
    let href = format!(
        "{page}?confirm=delete-backup&name={}",
        crate::query::encode_query_value(&backup)
    );
    view! { <a class="button danger" href=href data-delete=backup>"Delete…"</a> }
}

/// The confirmation, shown while the page's URL asks for it; `cluster_id` is the cluster
/// page's own (the action then returns there), none on the backups page.
#[component]
pub(super) fn ConfirmDelete(
    page: String,
    cluster_id: Option<String>,
    delete: ServerAction<DeleteBackup>,
) -> impl IntoView {
    let (confirm, which) = (confirming(), confirming_name());
    move || {
        let backup = which
            .get()
            .filter(|_| confirm.get().as_deref() == Some("delete-backup"))?;
        let (cancel, cluster_id) = (page.clone(), cluster_id.clone());
        Some(view! {
            <ConfirmStep id="confirm-backup-delete" title="Delete this backup?" cancel>
                <p>"Its archive, its sealed Secrets and the records of its restores are deleted. It cannot be restored afterwards."</p>
                <ActionForm action=delete attr:id="backup-delete-form">
                    {cluster_id.map(|id| view! { <input type="hidden" name="id" value=id /> })}
                    <input type="hidden" name="backup" value=backup />
                    <button type="submit" class="danger" id="confirm-backup-delete-submit">"Delete the backup"</button>
                </ActionForm>
            </ConfirmStep>
        })
    }
}
