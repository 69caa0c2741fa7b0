//! Server functions: users and invitations. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::users::dto::{InvitationDto, UsersPageDto};
use crate::AppError;

/// Every user (operators), and the link of an invitation created just before (shown once).
#[server(prefix = "/sfn", endpoint = "users")]
pub async fn users_page() -> Result<UsersPageDto, AppError> {
    use crate::account::dto::LoginOptions;
    use crate::users::dto::NewInviteDto;

    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let users = k.users().list(&actor).await?;
    let session = crate::ssr::session();
    let new_invite = match session {
        Some(s) => s
            .remove::<(String, String, String)>(FLASH_INVITE)
            .await
            .ok()
            .flatten()
            .map(|(username, url, expires_at)| NewInviteDto {
                username,
                url,
                expires_at,
            }),
        None => None,
    };
    Ok(UsersPageDto {
        users: users.into_iter().map(Into::into).collect(),
        new_invite,
        local_accounts: crate::context::get::<LoginOptions>().is_some_and(|o| o.local_accounts),
        kept: crate::kept::take().await,
    })
}

/// The open invitation behind a link (no login needed: the link is the proof).
#[server(prefix = "/sfn", endpoint = "invitation")]
pub async fn invitation(token: String) -> Result<InvitationDto, AppError> {
    let (user, invite) = crate::ssr::kqueen()?.users().invitation(&token).await?;
    Ok(InvitationDto {
        username: user.username,
        display_name: user.display_name,
        expires_at: invite.expires_at.to_rfc3339(),
    })
}

/// Usernames to offer when adding a member to `tenant` (empty for callers who may not add
/// members: the form is not shown to them anyway).
#[server(prefix = "/sfn", endpoint = "known_users")]
pub async fn known_users(tenant: String) -> Result<Vec<String>, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    match k.users().known_usernames(&actor, &tenant).await {
        Ok(list) => Ok(list),
        Err(kqueen_core::Error::Forbidden) => Ok(vec![]),
        Err(e) => Err(e.into()),
    }
}

/// Session key of a new invitation's (username, link, expiry) for the next page, set by
/// `actions::create_user` and `actions::reinvite_user`.
pub const FLASH_INVITE: &str = "kq.flash_invite";
