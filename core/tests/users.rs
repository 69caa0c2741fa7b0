//! Users created and invited by operators: the user list, invitations (hashed, single use,
//! expiring), the acceptance of a link, the first-run figures, and every one of these tried
//! with the wrong role.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use chrono::Duration;
use kqueen_core::audit::{AuditEvent, AuditQuery, Outcome};
use kqueen_core::identity::{GroupMap, Role};
use kqueen_core::invite::{Invite, NewUser};
use kqueen_core::page::Page;
use kqueen_core::tenant::NewTenant;
use kqueen_core::{Actor, Error, ExternalLogin, Kqueen};
use kqueen_testkit::TestDatabase;
use uuid::Uuid;

const PASSWORD: &str = "correct horse battery";

async fn kqueen(db: &TestDatabase) -> Kqueen {
    let map = GroupMap::parse("team-a=team-a:member,team-a-leads=team-a:admin").unwrap();
    Kqueen::new(Arc::new(db.connect().await)).with_group_map(map)
}

async fn sso(k: &Kqueen, sub: &str, groups: &[&str]) -> Actor {
    let login = ExternalLogin {
        issuer: "http://idp.test".into(),
        subject: sub.into(),
        preferred_username: Some(sub.into()),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    };
    Actor::user(k.auth().login_external(&login, None).await.unwrap())
}

async fn operator(k: &Kqueen) -> Actor {
    k.auth()
        .create_local_user(&Actor::cli(None), "root", PASSWORD, true)
        .await
        .unwrap();
    Actor::user(k.auth().login_local("root", PASSWORD, None).await.unwrap())
}

fn new_user(name: &str, operator: bool) -> NewUser {
    NewUser {
        username: name.into(),
        display_name: Some(format!("{name} display")),
        email: None,
        operator,
    }
}

async fn events(k: &Kqueen, action: &str) -> Vec<AuditEvent> {
    let q = AuditQuery {
        action: Some(action.into()),
        ..Default::default()
    };
    k.audit()
        .audit_events(&Actor::system(), &q, Page::default())
        .await
        .unwrap()
}

async fn an_invited_user_sets_a_password_once_and_signs_in(db: TestDatabase) {
    let k = kqueen(&db).await;
    let op = operator(&k).await;
    let issued = k
        .users()
        .invite(&op, &new_user("dev", false))
        .await
        .unwrap();
    assert!(issued.secret.starts_with("kqi_"));
    assert!(issued.invite.expires_at - issued.invite.created_at == Duration::days(7));
    assert!(!format!("{issued:?}").contains(&issued.secret));
    // Before the link is used: no password, so no login; listed as invited.
    assert!(matches!(
        k.auth().login_local("dev", PASSWORD, None).await,
        Err(Error::Unauthenticated)
    ));
    let list = k.users().list(&op).await.unwrap();
    let dev = list.iter().find(|u| u.user.username == "dev").unwrap();
    assert!(dev.local && !dev.has_password && dev.invite_expires_at.is_some());
    assert_eq!(dev.user.display_name.as_deref(), Some("dev display"));
    // Only the hash is stored: the secret itself is nowhere in the database.
    let stored = k
        .store()
        .invite_by_hash(&kqueen_core::secret::token_hash(&issued.secret))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.id, issued.invite.id);
    assert!(k
        .store()
        .invite_by_hash(&issued.secret)
        .await
        .unwrap()
        .is_none());

    let (who, _) = k.users().invitation(&issued.secret).await.unwrap();
    assert_eq!(who.username, "dev");
    // The password rules of every local account.
    let short = k.users().accept_invite(&issued.secret, "short", None).await;
    assert!(matches!(short, Err(Error::Invalid(ref v)) if v.field == "password"));
    let name = k
        .users()
        .accept_invite(&issued.secret, PASSWORD, Some("10.0.0.9".into()))
        .await
        .unwrap();
    assert_eq!(name, "dev");
    let id = k.auth().login_local("dev", PASSWORD, None).await.unwrap();
    assert!(!id.is_operator);
    // Single use.
    for _ in 0..2 {
        assert!(matches!(
            k.users()
                .accept_invite(&issued.secret, "another password!", None)
                .await,
            Err(Error::NotFound("invitation"))
        ));
    }
    assert!(matches!(
        k.users().invitation(&issued.secret).await,
        Err(Error::NotFound("invitation"))
    ));
    // Nor can an operator issue a new link for an account in use.
    assert!(matches!(
        k.users().reinvite(&op, "dev").await,
        Err(Error::Conflict(_))
    ));
    let accepted = events(&k, "user.invite.accept").await;
    let outcomes: Vec<_> = accepted
        .iter()
        .map(|e| (e.actor.as_str(), e.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("anonymous", Outcome::Denied),
            ("anonymous", Outcome::Denied),
            ("dev", Outcome::Success)
        ]
    );
    assert_eq!(accepted[2].source_ip.as_deref(), Some("10.0.0.9"));
    let created = events(&k, "user.create").await;
    assert!(created
        .iter()
        .any(|e| e.target == "dev" && e.actor == "root" && e.outcome == Outcome::Success));
}

async fn expired_and_replaced_links_stop_working(db: TestDatabase) {
    let k = kqueen(&db).await;
    let op = operator(&k).await;
    let first = k
        .users()
        .invite(&op, &new_user("late", false))
        .await
        .unwrap();
    let second = k.users().reinvite(&op, "late").await.unwrap();
    assert!(matches!(
        k.users().accept_invite(&first.secret, PASSWORD, None).await,
        Err(Error::NotFound("invitation"))
    ));
    // An invitation that expired a minute ago.
    let secret = "kqi_expired-secret-for-the-test";
    let now = kqueen_core::clock::now();
    let expired = Invite {
        id: Uuid::now_v7(),
        user_id: second.invite.user_id,
        created_by: "root".into(),
        created_at: now - Duration::days(7),
        expires_at: now - Duration::minutes(1),
        used_at: None,
    };
    let audit = AuditEvent::success(&Actor::system(), "user.invite", "late");
    k.store()
        .replace_invite(&expired, &kqueen_core::secret::token_hash(secret), &audit)
        .await
        .unwrap();
    assert!(matches!(
        k.users().accept_invite(secret, PASSWORD, None).await,
        Err(Error::NotFound("invitation"))
    ));
    let list = k.users().list(&op).await.unwrap();
    let late = list.iter().find(|u| u.user.username == "late").unwrap();
    assert_eq!(
        late.invite_expires_at, None,
        "no open link: the replaced one is gone"
    );
    for bogus in ["", "kq_not-an-invite", "kqi_unknown", &"kqi_x".repeat(100)] {
        assert!(matches!(
            k.users().accept_invite(bogus, PASSWORD, None).await,
            Err(Error::NotFound("invitation"))
        ));
    }
    // A fresh link works.
    let third = k.users().reinvite(&op, "late").await.unwrap();
    k.users()
        .accept_invite(&third.secret, PASSWORD, None)
        .await
        .unwrap();
    assert!(k.auth().login_local("late", PASSWORD, None).await.is_ok());
}

async fn only_operators_list_create_and_invite_users(db: TestDatabase) {
    let k = kqueen(&db).await;
    let op = operator(&k).await;
    k.tenancy()
        .create_tenant(
            &op,
            NewTenant {
                slug: "team-a".into(),
                display_name: None,
            },
        )
        .await
        .unwrap();
    let admin = sso(&k, "lead", &["team-a-leads"]).await;
    let member = sso(&k, "amy", &["team-a"]).await;
    for actor in [&admin, &member] {
        assert!(matches!(k.users().list(actor).await, Err(Error::Forbidden)));
        // Tenant admins may manage their members, but never create accounts, least of all
        // operators.
        assert!(matches!(
            k.users().invite(actor, &new_user("sneaky-op", true)).await,
            Err(Error::Forbidden)
        ));
        assert!(matches!(
            k.users()
                .create_with_password(actor, &new_user("sneaky-op", true), PASSWORD)
                .await,
            Err(Error::Forbidden)
        ));
        assert!(matches!(
            k.users().reinvite(actor, "root").await,
            Err(Error::Forbidden)
        ));
        assert_eq!(k.users().setup(actor).await.unwrap(), None);
    }
    assert!(matches!(
        k.users().list(&Actor::anonymous()).await,
        Err(Error::Unauthenticated)
    ));
    assert!(k
        .store()
        .user_by_username("sneaky-op")
        .await
        .unwrap()
        .is_none());
    let denied = events(&k, "user.create").await;
    assert_eq!(
        denied
            .iter()
            .filter(|e| e.target == "sneaky-op" && e.outcome == Outcome::Denied)
            .count(),
        4
    );

    // Operators may; the account then signs in with the operator's password.
    let ops2 = k
        .users()
        .create_with_password(&op, &new_user("ops2", true), PASSWORD)
        .await
        .unwrap();
    assert!(ops2.is_operator);
    assert!(
        k.auth()
            .login_local("ops2", PASSWORD, None)
            .await
            .unwrap()
            .is_operator
    );
    assert!(matches!(
        k.users()
            .create_with_password(&op, &new_user("ops2", false), PASSWORD)
            .await,
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        k.users().invite(&op, &new_user("bad name", false)).await,
        Err(Error::Invalid(ref v)) if v.field == "username"
    ));
    // An SSO user has no password to set.
    assert!(matches!(
        k.users().reinvite(&op, "amy").await,
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        k.users().reinvite(&op, "nobody").await,
        Err(Error::NotFound("user"))
    ));

    let list = k.users().list(&op).await.unwrap();
    let names: Vec<_> = list.iter().map(|u| u.user.username.as_str()).collect();
    assert_eq!(names, ["amy", "lead", "ops2", "root"]);
    let lead = &list[1];
    assert!(!lead.local);
    assert_eq!(lead.tenants, [("team-a".to_owned(), Role::Admin)]);
    assert!(lead.user.last_login_at.is_some());
    let dto = kqueen_dto::users::User::from(list[2].clone());
    assert_eq!(
        (dto.source.as_str(), dto.status.as_str()),
        ("local", "active")
    );
}

async fn the_first_run_figures_count_what_is_set_up(db: TestDatabase) {
    let k = kqueen(&db).await;
    let op = operator(&k).await;
    let empty = k.users().setup(&op).await.unwrap().unwrap();
    assert_eq!(
        (
            empty.tenants,
            empty.providers,
            empty.templates,
            empty.users,
            empty.memberships
        ),
        (0, 0, 0, 1, 0)
    );
    k.tenancy()
        .create_tenant(
            &op,
            NewTenant {
                slug: "team-a".into(),
                display_name: None,
            },
        )
        .await
        .unwrap();
    k.users()
        .invite(&op, &new_user("dev", false))
        .await
        .unwrap();
    k.tenancy()
        .put_member(&op, "team-a", "dev", Role::Member)
        .await
        .unwrap();
    let now = k.users().setup(&op).await.unwrap().unwrap();
    assert_eq!((now.tenants, now.users, now.memberships), (1, 2, 1));
}

async fn a_name_added_before_its_first_login_gets_the_membership_at_that_login(db: TestDatabase) {
    let k = kqueen(&db).await;
    let op = operator(&k).await;
    k.tenancy()
        .create_tenant(
            &op,
            NewTenant {
                slug: "team-a".into(),
                display_name: None,
            },
        )
        .await
        .unwrap();
    let lead = sso(&k, "lead", &["team-a-leads"]).await;
    // A tenant admin adds someone who has never signed in.
    k.tenancy()
        .put_member(&lead, "team-a", "newbie", Role::Admin)
        .await
        .unwrap();
    assert!(matches!(
        k.tenancy().put_member(&lead, "team-a", "bad name", Role::Member).await,
        Err(Error::Invalid(ref v)) if v.field == "username"
    ));
    let list = k.users().list(&op).await.unwrap();
    let newbie = list.iter().find(|u| u.user.username == "newbie").unwrap();
    assert!(newbie.pending && !newbie.local);
    // What the member form offers: everyone to operators, their tenants' people to admins.
    let known = k.users().known_usernames(&op, "team-a").await.unwrap();
    assert_eq!(known, ["lead", "newbie", "root"]);
    let known = k.users().known_usernames(&lead, "team-a").await.unwrap();
    assert_eq!(known, ["lead", "newbie"]);
    let amy = sso(&k, "amy", &["team-a"]).await;
    assert!(matches!(
        k.users().known_usernames(&amy, "team-a").await,
        Err(Error::Forbidden)
    ));
    assert_eq!(
        kqueen_dto::users::User::from(newbie.clone()).status,
        "waiting for first sign-in"
    );
    // No password: no local login with any password.
    assert!(k.auth().login_local("newbie", "", None).await.is_err());
    // Their first single sign-on login takes the account over, with the membership.
    let newbie = sso(&k, "newbie", &[]).await;
    let who = newbie.identity().unwrap();
    assert_eq!(who.memberships.len(), 1);
    assert_eq!(who.memberships[0].role, Role::Admin);
    let list = k.users().list(&op).await.unwrap();
    let newbie = list.iter().find(|u| u.user.username == "newbie").unwrap();
    assert!(!newbie.pending);
    assert_eq!(
        list.iter().filter(|u| u.user.username == "newbie").count(),
        1
    );
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

on_both_databases!(
    an_invited_user_sets_a_password_once_and_signs_in,
    expired_and_replaced_links_stop_working,
    only_operators_list_create_and_invite_users,
    the_first_run_figures_count_what_is_set_up,
    a_name_added_before_its_first_login_gets_the_membership_at_that_login,
);
