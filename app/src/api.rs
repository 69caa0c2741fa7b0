//! Server functions. Each one: take the request's actor, call one use case, map to a DTO.
//! Endpoints are named explicitly (`/sfn/<name>`) so their URLs are stable across builds.
//! Changes are made by plain HTML forms posting to the server's form routes (they work
//! without JavaScript); server functions only read.

use leptos::prelude::*;

use crate::dto::{
    AuditFilter, AuditPageDto, LoginOptions, MeDto, OverviewDto, TenantDto, TenantPageDto,
    TokensPageDto,
};
use crate::AppError;

/// Rows of one audit page.
pub const AUDIT_PAGE_SIZE: u32 = 50;

/// Session key of a one-time message for the next page (set by the server's form routes).
pub const FLASH_SECRET: &str = "kq.flash_secret";

#[cfg(feature = "ssr")]
pub(crate) mod ssr {
    use kqueen_core::{Actor, Kqueen};
    use leptos::prelude::use_context;

    use crate::dto::{LoginOptions, TenantDto};
    use crate::AppError;

    /// The domain services, provided by the server for every request.
    pub fn kqueen() -> Result<Kqueen, AppError> {
        use_context::<Kqueen>().ok_or_else(|| {
            tracing::error!("kqueen_core::Kqueen is missing from the request context");
            AppError::Internal
        })
    }

    /// Who is asking: resolved by the server's identity middleware for every request.
    pub fn actor() -> Actor {
        use_context::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Actor>().cloned())
            .unwrap_or_else(Actor::anonymous)
    }

    pub fn login_options() -> LoginOptions {
        use_context::<LoginOptions>().unwrap_or(LoginOptions {
            sso: false,
            local_accounts: false,
        })
    }

    pub fn tenant_dto(t: kqueen_core::tenant::Tenant) -> TenantDto {
        TenantDto {
            slug: t.slug.to_string(),
            display_name: t.display_name.as_str().to_owned(),
            created: t.created_at.format("%Y-%m-%d %H:%M").to_string(),
        }
    }

    /// `2026-11-24 08:05 UTC`, as chrono's `%Y-%m-%d %H:%M UTC` writes it. Every list row
    /// shows one or two of these: written field by field, it costs a tenth of chrono's
    /// strftime, which parses its format string again for every call (4 % of the cluster
    /// list page's CPU in the benchmark).
    pub fn time(t: chrono::DateTime<chrono::Utc>) -> String {
        use chrono::{Datelike, Timelike};
        use std::fmt::Write;
        if !(0..=9999).contains(&t.year()) {
            // chrono signs and widens such years; rare enough to take the slow path.
            return t.format("%Y-%m-%d %H:%M UTC").to_string();
        }
        let mut s = String::with_capacity(20);
        let _ = write!(
            s,
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute()
        );
        s
    }

    /// Tenants where the caller can request clusters: their own (all for operators).
    pub async fn request_tenants(
        k: &kqueen_core::Kqueen,
        actor: &kqueen_core::Actor,
    ) -> Result<Vec<String>, kqueen_core::Error> {
        use kqueen_core::page::Page;
        let list = k
            .list_tenants(actor, &Default::default(), Page::new(Page::MAX_LIMIT, 0))
            .await?;
        Ok(list.into_iter().map(|t| t.slug.to_string()).collect())
    }

    #[cfg(test)]
    mod tests {
        use chrono::{TimeZone, Utc};

        #[test]
        fn time_writes_what_strftime_writes() {
            for (y, mo, d, h, mi) in [
                (2026, 11, 24, 8, 5),
                (1970, 1, 1, 0, 0),
                (2000, 2, 29, 23, 59),
                (999, 12, 31, 12, 30),
                (9999, 12, 31, 23, 59),
                (10000, 1, 1, 0, 0),
                (-5, 6, 7, 8, 9),
            ] {
                let t = Utc
                    .with_ymd_and_hms(y, mo, d, h, mi, 42)
                    .single()
                    .expect("valid date");
                assert_eq!(
                    super::time(t),
                    t.format("%Y-%m-%d %H:%M UTC").to_string(),
                    "{y}-{mo}-{d}"
                );
            }
        }
    }
}

/// The logged-in user, or `None`.
#[server(prefix = "/sfn", endpoint = "me")]
pub async fn me() -> Result<Option<MeDto>, AppError> {
    let actor = ssr::actor();
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
    Ok(ssr::login_options())
}

/// Figures for the overview page.
#[server(prefix = "/sfn", endpoint = "overview")]
pub async fn overview() -> Result<OverviewDto, AppError> {
    let o = ssr::kqueen()?.overview(&ssr::actor()).await?;
    Ok(OverviewDto {
        tenants: o.counts.map(|c| c.tenants),
        users: o.counts.map(|c| c.users),
        audit_events: o.counts.map(|c| c.audit_events),
        database: o.backend.as_str().to_owned(),
    })
}

/// Tenants the caller may see whose slug or name contains `q`, by slug.
#[server(prefix = "/sfn", endpoint = "tenants")]
pub async fn list_tenants(q: Option<String>) -> Result<Vec<TenantDto>, AppError> {
    use kqueen_core::page::Page;
    use kqueen_core::tenant::TenantFilter;

    let filter = TenantFilter::from_query(q.as_deref());
    let tenants = ssr::kqueen()?
        .list_tenants(&ssr::actor(), &filter, Page::first(Page::MAX_LIMIT))
        .await?;
    Ok(tenants.into_iter().map(ssr::tenant_dto).collect())
}

/// A tenant with its members.
#[server(prefix = "/sfn", endpoint = "tenant")]
pub async fn tenant_page(slug: String) -> Result<TenantPageDto, AppError> {
    use kqueen_core::policy::{check, Permission};

    let (k, actor) = (ssr::kqueen()?, ssr::actor());
    let tenant = k.tenant(&actor, &slug).await?;
    let can_manage = check(&actor, Permission::ManageMembers(tenant.id)).is_ok();
    let members = k.members(&actor, &slug).await?;
    Ok(TenantPageDto {
        tenant: ssr::tenant_dto(tenant),
        members: members
            .into_iter()
            .map(|m| crate::dto::MemberDto {
                username: m.username,
                email: m.email,
                role: m.role.to_string(),
                source: m.source.as_str().to_owned(),
            })
            .collect(),
        can_manage,
    })
}

/// The caller's API tokens, and the secret of one just created (shown once).
#[server(prefix = "/sfn", endpoint = "tokens")]
pub async fn tokens_page() -> Result<TokensPageDto, AppError> {
    let (k, actor) = (ssr::kqueen()?, ssr::actor());
    let tokens = k.tokens(&actor).await?;
    let session: Option<tower_sessions::Session> = leptos_axum::extract().await.ok();
    let new_secret = match session {
        Some(s) => s.remove::<String>(FLASH_SECRET).await.ok().flatten(),
        None => None,
    };
    let now = kqueen_core::clock::now();
    Ok(TokensPageDto {
        tokens: tokens
            .into_iter()
            .map(|t| crate::dto::TokenDto {
                id: t.id.to_string(),
                active: t.is_active(now),
                name: t.name,
                prefix: t.prefix,
                created: t.created_at.format("%Y-%m-%d %H:%M").to_string(),
                expires: t.expires_at.format("%Y-%m-%d").to_string(),
                last_used: t
                    .last_used_at
                    .map(|d| d.format("%Y-%m-%d %H:%M").to_string()),
            })
            .collect(),
        new_secret,
    })
}

/// One page of the audit trail, newest first, filtered.
#[server(prefix = "/sfn", endpoint = "audit")]
pub async fn list_audit(
    filter: AuditFilter,
    offset: Option<u32>,
) -> Result<AuditPageDto, AppError> {
    use kqueen_core::page::Page;

    let (k, actor) = (ssr::kqueen()?, ssr::actor());
    let typed = kqueen_core::audit::AuditFilter {
        tenant: Some(filter.tenant),
        actor: Some(filter.actor),
        action: Some(filter.action),
        since: Some(filter.since),
        until: Some(filter.until),
    };
    let query = k.audit_query(&actor, &typed).await?;
    let offset = offset.unwrap_or(0);
    // One row more than shown tells whether an older page exists.
    let mut events = k
        .audit_events(&actor, &query, Page::new(AUDIT_PAGE_SIZE + 1, offset))
        .await?;
    let has_more = events.len() > AUDIT_PAGE_SIZE as usize;
    events.truncate(AUDIT_PAGE_SIZE as usize);
    Ok(AuditPageDto {
        events: events
            .into_iter()
            .map(|e| crate::dto::AuditEventDto {
                id: e.id.to_string(),
                time: e.occurred_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                actor: e.actor,
                tenant: e.tenant_slug,
                action: e.action,
                target: e.target,
                outcome: e.outcome.as_str().to_owned(),
                source_ip: e.source_ip,
                detail: e.detail,
            })
            .collect(),
        offset,
        limit: AUDIT_PAGE_SIZE,
        has_more,
    })
}
