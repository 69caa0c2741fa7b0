//! Use cases of identity and tenancy: logins, group mapping, memberships, tokens, audit
//! scoping, and every action tried as the wrong tenant and the wrong role.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use kqueen_core::audit::{AuditQuery, Outcome};
use kqueen_core::identity::{GroupMap, Role};
use kqueen_core::page::Page;
use kqueen_core::tenant::{NewTenant, TenantFilter};
use kqueen_core::{Actor, Error, ExternalLogin, Kqueen};
use kqueen_testkit::TestDatabase;

const MAP: &str =
    "team-a=team-a:member,team-a-leads=team-a:admin,team-b=team-b:member,kaas-admins=*:operator";

async fn kqueen(db: &TestDatabase) -> Kqueen {
    Kqueen::new(Arc::new(db.connect().await)).with_group_map(GroupMap::parse(MAP).unwrap())
}

fn sso(sub: &str, groups: &[&str]) -> ExternalLogin {
    ExternalLogin {
        issuer: "http://idp.test".into(),
        subject: sub.into(),
        preferred_username: Some(sub.into()),
        email: Some(format!("{sub}@example.test")),
        name: None,
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

async fn login(k: &Kqueen, sub: &str, groups: &[&str]) -> Actor {
    let ip = Some("10.0.0.1".to_owned());
    Actor::user(
        k.auth()
            .login_external(&sso(sub, groups), ip.clone())
            .await
            .unwrap(),
    )
    .with_source_ip(ip)
}

fn new_tenant(slug: &str, name: Option<&str>) -> NewTenant {
    NewTenant {
        slug: slug.into(),
        display_name: name.map(Into::into),
    }
}

async fn events(k: &Kqueen, action: &str) -> Vec<(String, String, Outcome)> {
    let q = AuditQuery {
        action: Some(action.into()),
        ..Default::default()
    };
    let list = k
        .audit()
        .audit_events(&Actor::system(), &q, Page::default())
        .await
        .unwrap();
    list.into_iter()
        .map(|e| (e.actor, e.target, e.outcome))
        .collect()
}

async fn cli_creates_tenants_with_defaults_and_refusals_are_audited(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let cli = Actor::cli(Some("ops".into()));
    let t = k
        .tenancy()
        .create_tenant(&cli, new_tenant("team-a", Some("  ")))
        .await
        .unwrap();
    assert_eq!(
        (t.slug.as_str(), t.display_name.as_str()),
        ("team-a", "team-a")
    );
    let dup = k
        .tenancy()
        .create_tenant(&cli, new_tenant("team-a", None))
        .await;
    assert!(
        matches!(dup, Err(Error::Conflict(ref m)) if m.contains("team-a")),
        "{dup:?}"
    );
    let bad = k
        .tenancy()
        .create_tenant(&cli, new_tenant("Team A", None))
        .await;
    assert!(
        matches!(bad, Err(Error::Invalid(ref v)) if v.field == "slug"),
        "{bad:?}"
    );
    assert_eq!(
        events(&k, "tenant.create").await,
        [
            ("cli:ops".into(), "Team A".into(), Outcome::Failure),
            ("cli:ops".into(), "team-a".into(), Outcome::Failure),
            ("cli:ops".into(), "team-a".into(), Outcome::Success),
        ]
    );
}

async fn sso_login_maps_groups_and_leaving_a_group_removes_access(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let alice = login(&k, "alice", &["team-a", "unmapped"]).await;
    let id = alice.identity().unwrap().clone();
    assert!(!id.is_operator);
    assert_eq!(
        id.memberships.len(),
        1,
        "tenant team-a was created for the mapping"
    );
    assert_eq!(
        (
            id.memberships[0].tenant_slug.as_str(),
            id.memberships[0].role
        ),
        ("team-a", Role::Member)
    );
    let seen = k
        .tenancy()
        .list_tenants(&alice, &TenantFilter::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(seen.len(), 1);

    // Promoted through another group, then removed from all groups.
    let alice = login(&k, "alice", &["team-a", "team-a-leads"]).await;
    assert_eq!(
        alice.identity().unwrap().role_in(seen[0].id),
        Some(Role::Admin)
    );
    let alice = login(&k, "alice", &[]).await;
    assert!(alice.identity().unwrap().memberships.is_empty());
    assert!(k
        .tenancy()
        .list_tenants(&alice, &TenantFilter::default(), Page::default())
        .await
        .unwrap()
        .is_empty());
    assert!(matches!(
        k.tenancy().tenant(&alice, "team-a").await,
        Err(Error::NotFound("tenant"))
    ));

    let bob = login(&k, "bob", &["kaas-admins"]).await;
    assert!(bob.identity().unwrap().is_operator);
    let logins = events(&k, "auth.login").await;
    assert_eq!(logins.len(), 4);
    assert!(logins.iter().all(|(_, _, o)| *o == Outcome::Success));
    assert_eq!(logins[0].0, "bob");
}

async fn manual_memberships_survive_sso_logins(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let op = login(&k, "bob", &["kaas-admins"]).await;
    k.tenancy()
        .create_tenant(&op, new_tenant("platform", None))
        .await
        .unwrap();
    login(&k, "alice", &["team-a"]).await;
    k.tenancy()
        .put_member(&op, "platform", "alice", Role::Admin)
        .await
        .unwrap();
    let alice = login(&k, "alice", &["team-a"]).await;
    let slugs: Vec<_> = alice
        .identity()
        .unwrap()
        .memberships
        .iter()
        .map(|m| m.tenant_slug.to_string())
        .collect();
    assert_eq!(slugs, ["platform", "team-a"]);
    k.tenancy()
        .remove_member(&alice, "platform", "alice")
        .await
        .unwrap();
    assert!(matches!(
        k.tenancy().remove_member(&op, "platform", "alice").await,
        Err(Error::NotFound("member"))
    ));
}

async fn local_accounts_log_in_with_the_right_password_only(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    assert!(k.auth().needs_bootstrap().await.unwrap());
    k.auth()
        .create_local_user(&Actor::cli(None), "root", "correct horse battery", true)
        .await
        .unwrap();
    assert!(!k.auth().needs_bootstrap().await.unwrap());
    let id = k
        .auth()
        .login_local("root", "correct horse battery", Some("10.1.1.1".into()))
        .await
        .unwrap();
    assert!(id.is_operator);
    for (user, pw) in [
        ("root", "wrong password!!"),
        ("nobody", "correct horse battery"),
    ] {
        assert!(matches!(
            k.auth().login_local(user, pw, None).await,
            Err(Error::Unauthenticated)
        ));
    }
    let logins = events(&k, "auth.login").await;
    assert_eq!(
        logins.iter().map(|e| e.2).collect::<Vec<_>>(),
        [Outcome::Failure, Outcome::Failure, Outcome::Success]
    );
    let short = k
        .auth()
        .create_local_user(&Actor::cli(None), "ops", "short", false)
        .await;
    assert!(matches!(short, Err(Error::Invalid(ref v)) if v.field == "password"));
    let member = Actor::user(id.clone());
    // Operators may create users; a non-operator may not.
    let alice = login(&k, "alice", &["team-a"]).await;
    assert!(matches!(
        k.auth()
            .create_local_user(&alice, "x1", "correct horse battery", false)
            .await,
        Err(Error::Forbidden)
    ));
    assert!(k
        .auth()
        .create_local_user(&member, "x2", "correct horse battery", false)
        .await
        .is_ok());
}

async fn api_tokens_are_shown_once_and_stop_working_when_revoked(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let alice = login(&k, "alice", &["team-a"]).await;
    let bob = login(&k, "bob", &["team-b"]).await;
    let issued = k.tokens().create_token(&alice, "laptop", 30).await.unwrap();
    assert!(issued.secret.starts_with("kq_"));
    assert!(
        !format!("{issued:?}").contains(&issued.secret),
        "Debug hides the secret"
    );
    let who = k
        .tokens()
        .authenticate_token(&issued.secret)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(who.username, "alice");
    assert!(k.tokens().list(&alice).await.unwrap()[0]
        .last_used_at
        .is_some());
    assert!(
        k.tokens().list(&bob).await.unwrap().is_empty(),
        "tokens are per user"
    );
    assert!(matches!(
        k.tokens().revoke_token(&bob, issued.token.id).await,
        Err(Error::NotFound("token"))
    ));
    assert!(
        k.tokens()
            .authenticate_token(&issued.secret)
            .await
            .unwrap()
            .is_some(),
        "bob could not revoke it"
    );
    k.tokens()
        .revoke_token(&alice, issued.token.id)
        .await
        .unwrap();
    assert!(k
        .tokens()
        .authenticate_token(&issued.secret)
        .await
        .unwrap()
        .is_none());
    assert!(matches!(
        k.tokens().revoke_token(&alice, issued.token.id).await,
        Err(Error::NotFound("token"))
    ));
    for bad in ["", "kq_nope", "Bearer x", &"kq_".repeat(100)] {
        assert!(k.tokens().authenticate_token(bad).await.unwrap().is_none());
    }
    assert!(matches!(
        k.tokens().create_token(&alice, "", 30).await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        k.tokens().create_token(&alice, "x", 0).await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        k.tokens().create_token(&alice, "x", 366).await,
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        k.tokens().create_token(&Actor::anonymous(), "x", 1).await,
        Err(Error::Unauthenticated)
    ));
    let revokes = events(&k, "token.revoke").await;
    assert_eq!(
        revokes.iter().map(|e| e.2).collect::<Vec<_>>(),
        [Outcome::Denied, Outcome::Success, Outcome::Denied]
    );
}

async fn a_device_login_signs_in_and_issues_a_token(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let dora = sso("dora", &["team-a"]);
    // Unacceptable token input is refused before anyone is signed in.
    for (name, days) in [("", 30), ("\u{7}", 30), ("cli", 0), ("cli", 366)] {
        let refused = k.tokens().sign_in_for_token(&dora, name, days, None).await;
        assert!(matches!(refused, Err(Error::Invalid(_))), "{name:?} {days}");
    }
    assert!(
        events(&k, "auth.login").await.is_empty(),
        "nobody signed in"
    );
    let (who, issued) = k
        .tokens()
        .sign_in_for_token(&dora, " kqueen CLI ", 7, Some("10.2.2.2".into()))
        .await
        .unwrap();
    assert_eq!(who.username, "dora");
    assert_eq!(
        who.memberships.len(),
        1,
        "groups mapped as at any SSO login"
    );
    assert_eq!(issued.token.name, "kqueen CLI");
    assert_eq!(
        (issued.token.expires_at - issued.token.created_at).num_days(),
        7
    );
    let bearer = k
        .tokens()
        .authenticate_token(&issued.secret)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bearer.user_id, who.user_id);
    assert_eq!(
        events(&k, "auth.login").await,
        [("dora".into(), "dora".into(), Outcome::Success)]
    );
    let created = events(&k, "token.create").await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].0, "dora", "the token is the user's own");
}

/// Tenant A's people try everything on tenant B; members try admin and operator actions.
async fn wrong_tenant_and_wrong_role_are_refused_and_audited(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let a_member = login(&k, "alice", &["team-a"]).await;
    let a_admin = login(&k, "ann", &["team-a", "team-a-leads"]).await;
    let b_member = login(&k, "carol", &["team-b"]).await;
    let b_id = k.tenancy().tenant(&b_member, "team-b").await.unwrap().id;
    let anonymous = Actor::anonymous();

    for actor in [&a_member, &a_admin] {
        assert!(matches!(
            k.tenancy().tenant(actor, "team-b").await,
            Err(Error::NotFound("tenant"))
        ));
        assert!(matches!(
            k.tenancy().members(actor, "team-b").await,
            Err(Error::NotFound("tenant"))
        ));
        assert!(matches!(
            k.tenancy()
                .put_member(actor, "team-b", "alice", Role::Admin)
                .await,
            Err(Error::NotFound("tenant"))
        ));
        assert!(matches!(
            k.tenancy().remove_member(actor, "team-b", "carol").await,
            Err(Error::NotFound("tenant"))
        ));
        let q = AuditQuery {
            tenant_id: Some(b_id),
            ..Default::default()
        };
        assert!(k
            .audit()
            .audit_events(actor, &q, Page::default())
            .await
            .is_err());
        assert!(matches!(
            k.tenancy()
                .create_tenant(actor, new_tenant("evil", None))
                .await,
            Err(Error::Forbidden)
        ));
    }
    // A member is not an admin of their own tenant.
    assert!(matches!(
        k.tenancy()
            .put_member(&a_member, "team-a", "carol", Role::Member)
            .await,
        Err(Error::Forbidden)
    ));
    assert!(matches!(
        k.audit()
            .audit_events(&a_member, &AuditQuery::default(), Page::default())
            .await,
        Err(Error::Forbidden)
    ));
    // The admin of A sees only A's events, even when asking for everything.
    let seen = k
        .audit()
        .audit_events(&a_admin, &AuditQuery::default(), Page::default())
        .await
        .unwrap();
    let a_id = k.tenancy().tenant(&a_admin, "team-a").await.unwrap().id;
    assert!(!seen.is_empty() && seen.iter().all(|e| e.tenant_id == Some(a_id)));
    // Anonymous callers are asked to log in.
    assert!(matches!(
        k.tenancy().tenant(&anonymous, "team-a").await,
        Err(Error::Unauthenticated)
    ));
    assert!(matches!(
        k.tenancy()
            .list_tenants(&anonymous, &TenantFilter::default(), Page::default())
            .await,
        Err(Error::Unauthenticated)
    ));
    assert!(matches!(
        k.overview(&anonymous).await,
        Err(Error::Unauthenticated)
    ));

    let q = AuditQuery {
        actor: Some("alice".into()),
        ..Default::default()
    };
    let denied: Vec<_> = k
        .audit()
        .audit_events(&Actor::system(), &q, Page::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.outcome == Outcome::Denied)
        .collect();
    assert!(denied.len() >= 7, "every refusal is audited: {denied:?}");
    assert!(denied
        .iter()
        .all(|e| e.source_ip.as_deref() == Some("10.0.0.1")));
}

async fn audit_filters_by_actor_action_prefix_and_time(db: TestDatabase) {
    let db = &db;
    let k = kqueen(db).await;
    let alice = login(&k, "alice", &["team-a"]).await;
    k.tokens().create_token(&alice, "ci", 1).await.unwrap();
    let sys = Actor::system();
    let q = |actor: Option<&str>, action: Option<&str>| AuditQuery {
        actor: actor.map(Into::into),
        action: action.map(Into::into),
        ..Default::default()
    };
    let count = |q: AuditQuery| {
        let k = k.clone();
        let sys = sys.clone();
        async move {
            k.audit()
                .audit_events(&sys, &q, Page::default())
                .await
                .unwrap()
                .len()
        }
    };
    assert_eq!(count(q(Some("alice"), None)).await, 2, "login + token");
    assert_eq!(count(q(None, Some("token."))).await, 1);
    assert_eq!(
        count(q(None, Some("token"))).await,
        0,
        "no dot: exact match"
    );
    assert_eq!(
        count(q(None, Some("tenant.create"))).await,
        1,
        "created for the mapping"
    );
    let later = AuditQuery {
        since: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
        ..Default::default()
    };
    assert_eq!(count(later).await, 0);
    let earlier = AuditQuery {
        until: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
        ..Default::default()
    };
    assert_eq!(count(earlier).await, 3);
}

/// Runs every scenario on a fresh database of each backend.
macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $name() { super::$name(super::TestDatabase::sqlite()).await; })*
        }
        mod postgres {
            $(#[tokio::test] async fn $name() {
                let Some(db) = super::TestDatabase::postgres().await else { return };
                super::$name(db).await;
            })*
        }
    };
}

/// Two portal processes on one database: a token revoked through one stops working in the
/// other within the cache's time-to-live, and at once where it was revoked.
async fn a_token_revoked_by_another_process_stops_within_the_cache_ttl(db: TestDatabase) {
    let db = &db;
    let ttl = std::time::Duration::from_millis(300);
    let one = kqueen(db).await.with_identity_cache_ttl(ttl);
    let two = kqueen(db).await.with_identity_cache_ttl(ttl);
    let alice = login(&one, "alice", &["team-a"]).await;
    let issued = one
        .tokens()
        .create_token(&alice, "laptop", 30)
        .await
        .unwrap();
    for k in [&one, &two] {
        assert!(k
            .tokens()
            .authenticate_token(&issued.secret)
            .await
            .unwrap()
            .is_some());
    }
    one.tokens()
        .revoke_token(&alice, issued.token.id)
        .await
        .unwrap();
    assert!(
        one.tokens()
            .authenticate_token(&issued.secret)
            .await
            .unwrap()
            .is_none(),
        "at once where it was revoked"
    );
    tokio::time::sleep(ttl + std::time::Duration::from_millis(50)).await;
    assert!(
        two.tokens()
            .authenticate_token(&issued.secret)
            .await
            .unwrap()
            .is_none(),
        "the other process after the ttl"
    );
}

on_both_databases!(
    a_token_revoked_by_another_process_stops_within_the_cache_ttl,
    cli_creates_tenants_with_defaults_and_refusals_are_audited,
    sso_login_maps_groups_and_leaving_a_group_removes_access,
    manual_memberships_survive_sso_logins,
    local_accounts_log_in_with_the_right_password_only,
    api_tokens_are_shown_once_and_stop_working_when_revoked,
    a_device_login_signs_in_and_issues_a_token,
    wrong_tenant_and_wrong_role_are_refused_and_audited,
    audit_filters_by_actor_action_prefix_and_time,
);
