//! Users (operators): the list, local accounts created with a password or invited with a
//! one-time set-password link, and a new link for an invitation that expired.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use kqueen_core::invite::{IssuedInvite, NewUser, UserSummary};
use kqueen_core::Actor;
use kqueen_dto::users::{Invitation, User as UserOut};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{ApiJson, ApiResult, ErrorOut};
use crate::state::AppState;

/// A new local account. Without `password`, the answer carries an invitation: a link, valid
/// for 7 days and once, with which the person sets their own password.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserIn {
    /// 1 to 64 of `A-Z a-z 0-9 . _ @ + -`; not `system`, `anonymous` or `cli`.
    #[schema(
        pattern = "^[A-Za-z0-9._@+-]{1,64}$",
        min_length = 1,
        max_length = 64,
        example = "dev"
    )]
    pub username: String,
    /// Up to 100 characters, no control characters.
    #[schema(pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$", max_length = 100)]
    pub display_name: Option<String>,
    /// An e-mail address, up to 254 characters (empty: none).
    #[schema(
        pattern = "^([^\\s\\x00-\\x1f\\x7f-\\x9f@]+@[^\\s\\x00-\\x1f\\x7f-\\x9f]+)?$",
        max_length = 254
    )]
    pub email: Option<String>,
    /// Also an operator of the whole installation (default false).
    pub operator: Option<bool>,
    /// The password, 12 to 256 characters; leave it out to invite the person instead.
    #[schema(min_length = 12, max_length = 256)]
    pub password: Option<String>,
}

/// The account created, and its invitation when no password was given.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct UserCreated {
    pub user: UserOut,
    pub invitation: Option<Invitation>,
}

fn invitation(state: &AppState, issued: &IssuedInvite) -> Invitation {
    let path = issued.path();
    Invitation {
        username: issued.user.username.clone(),
        url: format!(
            "{}{path}",
            state.auth.config.public_url.trim_end_matches('/')
        ),
        path,
        expires_at: issued.invite.expires_at.to_rfc3339(),
    }
}

/// Every user, by username, with their tenants and whether they are local or from the
/// identity provider (operators; at most 1000).
#[utoipa::path(get, path = "/api/v1/users", tag = "users",
    responses((status = 200, body = Vec<UserOut>), (status = 403, body = ErrorOut)))]
pub async fn list_users(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
) -> ApiResult<Json<Vec<UserOut>>> {
    let list = state.kqueen.users().list(&actor).await?;
    Ok(Json(list.into_iter().map(UserOut::from).collect()))
}

/// Creates a local account (operators): with `password`, ready to sign in; without, invited
/// (the answer's `invitation.url` is the one-time set-password link, shown only here).
#[utoipa::path(post, path = "/api/v1/users", tag = "users", request_body = UserIn,
    responses((status = 201, body = UserCreated), (status = 400, body = ErrorOut),
        (status = 403, body = ErrorOut), (status = 409, body = ErrorOut,
            description = "A user of that name exists")))]
pub async fn create_user(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    ApiJson(input): ApiJson<UserIn>,
) -> ApiResult<(StatusCode, Json<UserCreated>)> {
    let new = NewUser {
        username: input.username,
        display_name: input.display_name,
        email: input.email,
        operator: input.operator.unwrap_or(false),
    };
    let users = state.kqueen.users();
    let (user, invite) = match input.password {
        Some(password) => (
            users.create_with_password(&actor, &new, &password).await?,
            None,
        ),
        None => {
            let issued = users.invite(&actor, &new).await?;
            (issued.user.clone(), Some(issued))
        }
    };
    let summary = UserSummary {
        user,
        local: true,
        pending: false,
        has_password: invite.is_none(),
        invite_expires_at: invite.as_ref().map(|i| i.invite.expires_at),
        tenants: vec![],
    };
    Ok((
        StatusCode::CREATED,
        Json(UserCreated {
            user: summary.into(),
            invitation: invite.map(|i| invitation(&state, &i)),
        }),
    ))
}

/// A new invitation link for a local account that has not set its password yet (operators);
/// the earlier link stops working. Accounts with a password and single sign-on accounts
/// answer 409.
#[utoipa::path(post, path = "/api/v1/users/{username}/invite", tag = "users",
    params(("username" = String, Path, pattern = "^[A-Za-z0-9._@+-]{1,64}$", max_length = 64)),
    responses((status = 201, body = Invitation), (status = 403, body = ErrorOut),
        (status = 404, body = ErrorOut),
        (status = 409, body = ErrorOut, description = "The account has a password, or signs in through the identity provider")))]
pub async fn invite_user(
    State(state): State<AppState>,
    Extension(actor): Extension<Actor>,
    Path(username): Path<String>,
) -> ApiResult<(StatusCode, Json<Invitation>)> {
    let issued = state.kqueen.users().reinvite(&actor, &username).await?;
    Ok((StatusCode::CREATED, Json(invitation(&state, &issued))))
}
