//! `/admin/users`: every user (local or single sign-on, operator or not, last login,
//! tenants), and the form with which operators create a local account: invited with a
//! one-time set-password link (default), or with a password set now.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::components::{
    described_by, invalid, ErrorNote, FieldError, FormError, KeptFormError, TableHead,
};
use crate::kept::{checked_or, error_at, value_or, KeptForm};
use crate::time::{to_day, to_minute};
use crate::users::actions::{CreateUser, ReinviteUser};
use crate::users::dto::{User, UsersPageDto};

#[component]
pub fn Users() -> impl IntoView {
    let create = ServerAction::<CreateUser>::new();
    let reinvite = ServerAction::<ReinviteUser>::new();
    // Read again after every write (hydrated, a write does not reload the page).
    let page = crate::hydrated::resource(
        move || (create.version().get(), reinvite.version().get()),
        |_| crate::users::sfn::users_page(),
    );
    view! {
        <Title text="Users" />
        <h1>"Users"</h1>
        <p class="muted">
            "People who sign in through single sign-on appear here after their first login. "
            "Create a local account for someone without one: they get a link to choose their "
            "password. Then add them to a tenant on the tenant's page."
        </p>
        <FormError />
        <Suspense fallback=|| view! { <p class="muted">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => view! { <UserList page=p create reinvite /> }.into_any(),
                    Err(e) => {
                        crate::not_found::status_for(&e);
                        view! { <ErrorNote error=e /> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

#[component]
fn UserList(
    page: UsersPageDto,
    create: ServerAction<CreateUser>,
    reinvite: ServerAction<ReinviteUser>,
) -> impl IntoView {
    // A refused create comes back as typed, except the password, which is never kept.
    let kept = KeptForm::of(&page.kept, "create-user");
    let [e_name, e_display, e_email, e_password] =
        ["username", "display_name", "email", "password"].map(|f| error_at(&kept, f));
    let set_now = kept
        .as_ref()
        .is_some_and(|k| k.value("how").as_deref() == Some("password"));
    view! {
        {page.new_invite.map(|i| view! {
            <section class="card notice" aria-live="polite" id="new-invite">
                <h2>{format!("Invitation for {}", i.username)}</h2>
                <p>
                    "Send this link to " <strong>{i.username.clone()}</strong>
                    ". Copy it now: it is shown only this once. It works once, until "
                    {to_minute(&i.expires_at)} "."
                </p>
                <pre><code id="invite-link">{i.url}</code></pre>
            </section>
        })}
        {(!page.local_accounts).then(|| view! {
            <p class="error" id="local-disabled">
                "Local accounts are disabled here (KQUEEN_LOCAL_ACCOUNTS=false): accounts created "
                "below cannot sign in until they are enabled."
            </p>
        })}
        <section class="card" aria-labelledby="new-user-heading">
            <div class="card-head"><h2 id="new-user-heading">"New local user"</h2></div>
            <KeptFormError kept=kept.clone() />
            <ActionForm action=create attr:class="stack" attr:id="create-user">
                <div class="field">
                    <label for="new-user-name">"Username"</label>
                    <input id="new-user-name" name="username" required maxlength="64"
                        pattern="[A-Za-z0-9._@+\\-]+" autocomplete="off" value=value_or(&kept, "username", "")
                        aria-invalid=invalid(&e_name) aria-describedby=described_by("new-user-name", Some("new-user-name-help"), &e_name) />
                    <FieldError input="new-user-name".to_owned() error=e_name.clone() />
                    <small id="new-user-name-help" class="muted">"Letters, digits and . _ @ + - (up to 64)."</small>
                </div>
                <div class="field">
                    <label for="user-display">"Display name (optional)"</label>
                    <input id="user-display" name="display_name" maxlength="100" value=value_or(&kept, "display_name", "")
                        aria-invalid=invalid(&e_display) aria-describedby=described_by("user-display", None, &e_display) />
                    <FieldError input="user-display".to_owned() error=e_display.clone() />
                </div>
                <div class="field">
                    <label for="user-email">"E-mail (optional)"</label>
                    <input id="user-email" name="email" type="email" maxlength="254" value=value_or(&kept, "email", "")
                        aria-invalid=invalid(&e_email) aria-describedby=described_by("user-email", None, &e_email) />
                    <FieldError input="user-email".to_owned() error=e_email.clone() />
                </div>
                <div class="field">
                    <label class="check"><input type="checkbox" name="operator" value="true" id="user-operator" checked=checked_or(&kept, "operator", false) />
                        " Operator (manages the whole installation)"</label>
                </div>
                <fieldset class="field">
                    <legend>"Password"</legend>
                    <label class="check"><input type="radio" name="how" value="invite" checked=!set_now id="how-invite" />
                        " Send an invitation link: they choose their password (link valid 7 days, once)"</label>
                    <label class="check"><input type="radio" name="how" value="password" checked=set_now id="how-password" />
                        " Set a password now"</label>
                    <label for="user-password">"Password (only when set now; at least 12 characters)"</label>
                    <input id="user-password" name="password" type="password" minlength="12"
                        maxlength="256" autocomplete="new-password"
                        aria-invalid=invalid(&e_password) aria-describedby=described_by("user-password", None, &e_password) />
                    <FieldError input="user-password".to_owned() error=e_password.clone() />
                </fieldset>
                <button type="submit" id="create-user-submit">"Create user"</button>
            </ActionForm>
        </section>
        <section class="card" aria-labelledby="users-heading">
            <div class="card-head"><h2 id="users-heading">{format!("All users ({})", page.users.len())}</h2></div>
            <div class="table-scroll">
                <table class="table" id="user-table">
                    <TableHead cols=vec!["User", "Sign-in", "Operator", "Status", "Last login", "Tenants", ""] />
                    <tbody>
                        {page.users.into_iter().map(|u| view! { <UserRow user=u reinvite /> }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn UserRow(user: User, reinvite: ServerAction<ReinviteUser>) -> impl IntoView {
    let tenants = if user.tenants.is_empty() {
        "none".to_owned()
    } else {
        user.tenants
            .iter()
            .map(|t| format!("{} ({})", t.tenant, t.role))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let status = match &user.invite_expires_at {
        Some(t) if user.status == "invited" => format!("invited, link valid until {}", to_day(t)),
        _ => user.status.clone(),
    };
    let can_reinvite = user.status == "invited" || user.status == "invite expired";
    let name = user.username.clone();
    view! {
        <tr data-user=user.username.clone()>
            <td>
                <strong>{user.username.clone()}</strong>
                {user.display_name.clone().map(|d| view! { <br /><span class="muted">{d}</span> })}
            </td>
            <td>{if user.source == "local" { "local" } else { "single sign-on" }}</td>
            <td>{if user.operator { "yes" } else { "" }}</td>
            <td data-status=user.status.clone()>{status}</td>
            <td>{user.last_login_at.as_deref().map_or_else(|| "never".into(), to_minute)}</td>
            <td>{tenants}</td>
            <td>
                {can_reinvite.then(|| view! {
                    <ActionForm action=reinvite>
                        <input type="hidden" name="username" value=name />
                        <button type="submit" class="link-button">"New link"</button>
                    </ActionForm>
                })}
            </td>
        </tr>
    }
}
