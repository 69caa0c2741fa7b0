//! Server functions: The logged-in user, the login options and the API tokens page. Each one takes the request's actor, calls one use
//! case, and maps the result to a DTO.

use leptos::prelude::*;

use crate::account::dto::LoginOptions;
use crate::account::dto::MeDto;
use crate::account::dto::TokensPageDto;
use crate::AppError;

/// The logged-in user, or `None`.
#[server(prefix = "/sfn", endpoint = "me")]
pub async fn me() -> Result<Option<MeDto>, AppError> {
    let actor = crate::ssr::actor();
    Ok(actor.identity().map(|i| MeDto {
        username: i.username.clone(),
        display_name: i.display_name.clone(),
        operator: i.is_operator,
        tenants: i
            .memberships
            .iter()
            .map(|m| (m.tenant_slug.to_string(), m.role.to_string()))
            .collect(),
        can_audit: i.is_operator || i.admin_tenants().next().is_some(),
    }))
}

/// How one can log in here.
#[server(prefix = "/sfn", endpoint = "login_options")]
pub async fn get_login_options() -> Result<LoginOptions, AppError> {
    Ok(
        crate::context::get::<LoginOptions>().unwrap_or(LoginOptions {
            sso: false,
            local_accounts: false,
        }),
    )
}

/// The caller's API tokens, and the secret of one just created (shown once).
#[server(prefix = "/sfn", endpoint = "tokens")]
pub async fn tokens_page() -> Result<TokensPageDto, AppError> {
    let (k, actor) = (crate::ssr::kqueen()?, crate::ssr::actor());
    let tokens = k.tokens().list(&actor).await?;
    let session = crate::ssr::session();
    let new_secret = match session {
        Some(s) => s.remove::<String>(FLASH_SECRET).await.ok().flatten(),
        None => None,
    };
    Ok(TokensPageDto {
        tokens: tokens.into_iter().map(Into::into).collect(),
        new_secret,
        kept: crate::kept::take().await,
    })
}

/// Session key of a one-time message for the next page (set by `actions::create_token`).
pub const FLASH_SECRET: &str = "kq.flash_secret";
