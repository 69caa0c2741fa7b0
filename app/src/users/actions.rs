//! The users page's writes and the acceptance of an invitation, as server functions behind
//! `ActionForm`: they post and redirect without JavaScript, and run in place with it.

use leptos::prelude::*;

use crate::AppError;

/// The operators' user list.
pub const USERS_PAGE: &str = "/admin/users";

/// Keeps a new invitation's link in the session for the users page to show once.
#[cfg(feature = "ssr")]
async fn keep_for_display(issued: &kqueen_core::invite::IssuedInvite) -> kqueen_core::Result<()> {
    use kqueen_core::Error;

    let base = crate::context::get::<crate::users::PublicUrl>()
        .map(|u| u.0)
        .unwrap_or_default();
    let url = format!("{}{}", base.trim_end_matches('/'), issued.path());
    let expires = issued.invite.expires_at.to_rfc3339();
    let session = crate::ssr::session();
    let Some(session) = session else {
        return Err(Error::Corrupt("session".into()));
    };
    session
        .insert(
            super::sfn::FLASH_INVITE,
            (issued.user.username.clone(), url, expires),
        )
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "cannot keep the new invitation for display");
            Error::Corrupt("session".into())
        })
}

/// Creates a local account (operators): `how` = `invite` (default) makes a one-time
/// set-password link, shown once on the users page; `password` sets the password now.
#[server(prefix = "/sfn", endpoint = "create_user")]
pub async fn create_user(
    username: String,
    display_name: Option<String>,
    email: Option<String>,
    operator: Option<String>,
    how: Option<String>,
    password: Option<String>,
) -> Result<(), AppError> {
    use kqueen_core::invite::NewUser;
    use kqueen_core::ValidationError;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    // What comes back if the form is refused: never the password.
    let values = [
        ("username", Some(username.clone())),
        ("display_name", display_name.clone()),
        ("email", email.clone()),
        ("operator", operator.clone()),
        ("how", how.clone()),
        // Named, so that its error is shown at it; its value is not kept.
        ("password", None),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.unwrap_or_default()))
    .collect();
    let new = NewUser {
        username: username.trim().to_owned(),
        display_name,
        email,
        operator: operator.is_some_and(|o| o == "true"),
    };
    let result = if how.as_deref() == Some("password") {
        match password.filter(|p| !p.is_empty()) {
            Some(p) => k
                .users()
                .create_with_password(&actor, &new, &p)
                .await
                .map(|_| ()),
            None => Err(ValidationError::new(
                "password",
                "is required when you set the password now (or choose an invitation link)",
            )
            .into()),
        }
    } else {
        match k.users().invite(&actor, &new).await {
            Ok(issued) => keep_for_display(&issued).await,
            Err(e) => Err(e),
        }
    };
    match result {
        Ok(()) => crate::ssr::back(USERS_PAGE, Ok(())),
        Err(e) => crate::kept::refused(USERS_PAGE, "create-user", values, e).await,
    }
    Ok(())
}

/// A new invitation link for a local account that has not set its password yet.
#[server(prefix = "/sfn", endpoint = "reinvite_user")]
pub async fn reinvite_user(username: String) -> Result<(), AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let result = match k.users().reinvite(&actor, username.trim()).await {
        Ok(issued) => keep_for_display(&issued).await,
        Err(e) => Err(e),
    };
    crate::ssr::back(USERS_PAGE, result);
    Ok(())
}

/// Sets the invited person's password with the link's secret (no login needed), then sends
/// them to the login page to sign in with it.
#[server(prefix = "/sfn", endpoint = "accept_invite")]
pub async fn accept_invite(
    token: String,
    password: String,
    password_again: String,
) -> Result<(), AppError> {
    use kqueen_core::ValidationError;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    if password != password_again {
        let e = ValidationError::new("password_again", "does not match the password");
        crate::ssr::back(&invite_page(&token), Err(e.into()));
        return Ok(());
    }
    match k
        .users()
        .accept_invite(&token, &password, actor.source_ip.clone())
        .await
    {
        Ok(username) => leptos_axum::redirect(&format!(
            "/login?welcome={}",
            crate::query::form_escape(&username)
        )),
        Err(e) => crate::ssr::back(&invite_page(&token), Err(e)),
    }
    Ok(())
}

#[cfg(feature = "ssr")]
fn invite_page(token: &str) -> String {
    format!("/invite/{}", crate::query::form_escape(token))
}
