//! `/clusters/:id/apps/new`: the deploy form. Name, version, an optional namespace and the
//! manifests (pasted, or read from a file once the page is hydrated); "Preview" runs the
//! dry run and opens its diff.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::apps::actions::{PreviewApp, FORM};
use crate::apps::dto::NewAppPageDto;
use crate::components::{described_by, invalid, ErrorNote, FieldError, FormError, KeptFormError};
use crate::kept::{error_at, value_or, KeptForm};

/// Reads the chosen file into the manifests' field (hydrated pages only: without JavaScript
/// the file input is not shown). An inline handler: the portal's wasm has no File API
/// bindings, and this is the whole of it.
const READ_FILE: &str = "const f=this.files&&this.files[0];if(f){f.text().then(t=>{const m=document.getElementById('app-manifests');m.value=t;m.dispatchEvent(new Event('input',{bubbles:true}));});}";

#[component]
pub fn NewApp() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let preview = ServerAction::<PreviewApp>::new();
    // Read again after a refused preview: the form comes back as it was typed.
    let page = crate::hydrated::resource(
        move || (id(), preview.version().get()),
        |(id, _)| crate::apps::sfn::new_app_page(id),
    );
    view! {
        <Title text="Deploy an application" />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <DeployForm page=p preview /> }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <h1>"Deploy an application"</h1> <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn DeployForm(page: NewAppPageDto, preview: ServerAction<PreviewApp>) -> impl IntoView {
    let kept = KeptForm::of(&page.kept, FORM);
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    let [name_error, version_error, namespace_error, manifests_error] =
        ["name", "version", "namespace", "manifests"].map(|f| error_at(&kept, f));
    let cluster_link = format!("/clusters/{}", page.cluster_id);
    view! {
        <div class="page-head">
            <h1>"Deploy an application"</h1>
            <span class="muted">"into cluster " <a href=cluster_link.clone() id="app-cluster">{page.cluster_name.clone()}</a></span>
        </div>
        <FormError />
        {(!page.ready).then(|| view! {
            <p class="error" role="alert" id="app-not-ready">"Applications are deployed into Ready clusters; this one is not Ready."</p>
        })}
        {(!page.can_deploy).then(|| view! {
            <p class="muted" id="app-no-rights">"Members of the cluster's tenant deploy applications here."</p>
        })}
        <section class="card" aria-labelledby="app-form-heading">
            <div class="card-head"><h2 id="app-form-heading">"Version and manifests"</h2></div>
            <p class="muted">"Each version goes into a namespace of its own, and is applied with your own rights in the cluster. Preview first: nothing changes until you deploy."</p>
            <KeptFormError kept=kept.clone() />
            <ActionForm action=preview attr:class="stack" attr:id=FORM>
                <input type="hidden" name="id" value=page.cluster_id.clone() />
                <div class="app-form-row">
                    <div class="field">
                        <label for="app-name">"Application name"</label>
                        <input id="app-name" name="name" required maxlength="40" autocomplete="off" spellcheck="false"
                            pattern="[a-z]([a-z0-9\\-]*[a-z0-9])?"
                            value=value_or(&kept, "name", "")
                            aria-invalid=invalid(&name_error)
                            aria-describedby=described_by("app-name", Some("app-name-help"), &name_error) />
                        <FieldError input="app-name".to_owned() error=name_error.clone() />
                        <small id="app-name-help" class="muted">"Lowercase letters, digits and '-' (shop)."</small>
                    </div>
                    <div class="field">
                        <label for="app-version">"Version"</label>
                        <input id="app-version" name="version" required maxlength="40" autocomplete="off" spellcheck="false"
                            value=value_or(&kept, "version", "")
                            aria-invalid=invalid(&version_error)
                            aria-describedby=described_by("app-version", Some("app-version-help"), &version_error) />
                        <FieldError input="app-version".to_owned() error=version_error.clone() />
                        <small id="app-version-help" class="muted">"Letters, digits, '.', '_' or '-' (1.4.2)."</small>
                    </div>
                    <div class="field">
                        <label for="app-namespace">"Namespace (optional)"</label>
                        <input id="app-namespace" name="namespace" maxlength="63" autocomplete="off" spellcheck="false"
                            placeholder="<name>-<version>"
                            value=value_or(&kept, "namespace", "")
                            aria-invalid=invalid(&namespace_error)
                            aria-describedby=described_by("app-namespace", Some("app-namespace-help"), &namespace_error) />
                        <FieldError input="app-namespace".to_owned() error=namespace_error.clone() />
                        <small id="app-namespace-help" class="muted">"Empty: the application's name and version (shop-1-4-2)."</small>
                    </div>
                </div>
                <div class="field">
                    <label for="app-manifests">"Manifests (YAML, documents separated by ---)"</label>
                    <textarea id="app-manifests" name="manifests" rows="18" required spellcheck="false" class="app-manifests"
                        aria-invalid=invalid(&manifests_error)
                        aria-describedby=described_by("app-manifests", Some("app-manifests-help"), &manifests_error)>
                        {value_or(&kept, "manifests", "")}
                    </textarea>
                    <FieldError input="app-manifests".to_owned() error=manifests_error.clone() />
                    <small id="app-manifests-help" class="muted">"At most 1 MiB and 500 objects. Namespaced objects go into the version's namespace."</small>
                    {move || hydrated.get().then(|| view! {
                        <label class="app-file" for="app-file">"…or read a file: "
                            <input type="file" id="app-file" accept=".yaml,.yml,.json,text/yaml" onchange=READ_FILE />
                        </label>
                    })}
                </div>
                <p><button type="submit" id="app-preview" disabled=!page.ready>"Preview"</button></p>
            </ActionForm>
        </section>
        <p><a href=cluster_link>"Back to the cluster"</a></p>
    }
}
