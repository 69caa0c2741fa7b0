//! `/tokens`: the user's personal API tokens.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::account::actions::{CreateToken, RevokeToken};
use crate::account::dto::TokensPageDto;
use crate::components::{
    described_by, invalid, ErrorNote, FieldError, FormError, KeptFormError, TableHead,
};
use crate::kept::{error_at, value_or, KeptForm};
use crate::time::{to_day, to_minute};

#[component]
pub fn Tokens() -> impl IntoView {
    let create = ServerAction::<CreateToken>::new();
    let revoke = ServerAction::<RevokeToken>::new();
    // Read again after every write (hydrated, a write does not reload the page).
    let page = crate::hydrated::resource(
        move || (create.version().get(), revoke.version().get()),
        |_| crate::account::sfn::tokens_page(),
    );
    view! {
        <Title text="API tokens" />
        <h1>"API tokens"</h1>
        <p class="muted">
            "Use a token with the REST API or the command line: "
            <code>"Authorization: Bearer <token>"</code> "."
        </p>
        <FormError />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <TokenList page=p create revoke /> }.into_any(),
                    Err(e) => view! { <ErrorNote error=e /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn TokenList(
    page: TokensPageDto,
    create: ServerAction<CreateToken>,
    revoke: ServerAction<RevokeToken>,
) -> impl IntoView {
    let kept = KeptForm::of(&page.kept, "create-token");
    let (name_error, days_error) = (error_at(&kept, "name"), error_at(&kept, "days"));
    let (name_invalid, days_invalid) = (invalid(&name_error), invalid(&days_error));
    let name_described = described_by("token-name", None, &name_error);
    let days_described = described_by("token-days", None, &days_error);
    view! {
        {page.new_secret.map(|secret| view! {
            <section class="card notice" aria-live="polite">
                <h2>"Your new token"</h2>
                <p>"Copy it now: it is shown only this once."</p>
                <pre><code id="new-token">{secret}</code></pre>
            </section>
        })}
        <section class="card">
            <KeptFormError kept=kept.clone() />
            <ActionForm action=create attr:class="filter" attr:id="create-token">
                <label for="token-name">"Name"</label>
                <input id="token-name" name="name" required maxlength="100" placeholder="e.g. laptop"
                    value=value_or(&kept, "name", "")
                    aria-invalid=name_invalid aria-describedby=name_described />
                <label for="token-days">"Valid for (days)"</label>
                <input id="token-days" name="days" type="number" min="1" max="365" value=value_or(&kept, "days", "90")
                    aria-invalid=days_invalid aria-describedby=days_described />
                <button type="submit">"Create token"</button>
            </ActionForm>
            <FieldError input="token-name".to_owned() error=name_error />
            <FieldError input="token-days".to_owned() error=days_error />
        </section>
        <section class="card">
            {if page.tokens.is_empty() {
                view! { <p class="empty">"No tokens yet."</p> }.into_any()
            } else {
                view! {
                    <table class="table" id="token-table">
                        <TableHead cols=vec!["Name", "Token", "Created", "Expires", "Last used", "State", ""] />
                        <tbody>
                            {page.tokens.into_iter().map(|t| { let key = t.prefix.clone(); view! {
                                <tr data-token=key>
                                    <td>{t.name}</td>
                                    <td><code>{t.prefix}"…"</code></td>
                                    <td>{to_minute(&t.created_at)}</td>
                                    <td>{to_day(&t.expires_at)}</td>
                                    <td>{t.last_used_at.as_deref().map_or_else(|| "never".into(), to_minute)}</td>
                                    <td>{if t.active { "active" } else { "revoked or expired" }}</td>
                                    <td>
                                        {t.active.then(|| view! {
                                            <ActionForm action=revoke>
                                                <input type="hidden" name="id" value=t.id />
                                                <button type="submit" class="link-button">"Revoke"</button>
                                            </ActionForm>
                                        })}
                                    </td>
                                </tr>
                            }}).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>
    }
}
