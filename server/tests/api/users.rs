//! Users created and invited by operators, through `/api/v1/users` and the portal: the
//! invitation link sets a password once, the wrong roles are refused, the member form offers
//! the known users, and an operator with nothing set up sees the first-run checklist.

use kqueen_core::audit::{AuditQuery, Outcome};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{TestApp, PASSWORD};

async fn call(
    client: &reqwest::Client,
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut req = client.request(method, format!("{}{path}", app.url));
    if let Some(b) = body {
        req = req.json(&b);
    }
    req.send().await.unwrap()
}

/// Posts the invitation page's form as a browser without JavaScript does.
async fn accept(app: &TestApp, path: &str, password: &str, again: &str) -> String {
    let token = path.trim_start_matches("/invite/");
    let res = app
        .browser()
        .post(format!("{}/sfn/accept_invite", app.url))
        .form(&[
            ("token", token),
            ("password", password),
            ("password_again", again),
        ])
        .send()
        .await
        .unwrap();
    res.headers()["location"].to_str().unwrap().to_owned()
}

async fn operators_invite_people_who_then_set_their_password(app: &TestApp) {
    let op = app.user("root", true, &[]).await;
    let res = call(
        &op,
        app,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "dev", "display_name": "Dev Eloper"})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["user"]["status"], "invited", "{created}");
    assert_eq!(created["user"]["source"], "local");
    let path = created["invitation"]["path"].as_str().unwrap().to_owned();
    assert!(path.starts_with("/invite/kqi_"), "{path}");
    assert_eq!(
        created["invitation"]["url"],
        format!("{}{path}", app.url),
        "on the public URL"
    );

    // The invited person opens the link without being signed in.
    let page = app.get(&path).await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("Set your password") && html.contains(r#"id="invite-username""#));
    // The password rules of every local account, and the two fields must agree.
    let to = accept(app, &path, "short", "short").await;
    assert!(to.starts_with(&format!("{path}?error=")), "{to}");
    let to = accept(app, &path, PASSWORD, "something else!").await;
    assert!(to.contains("error=") && to.contains("match"), "{to}");
    let to = accept(app, &path, PASSWORD, PASSWORD).await;
    assert_eq!(to, "/login?welcome=dev");
    let browser = app.browser();
    assert_eq!(
        app.login(&browser, "dev", PASSWORD).await.headers()["location"],
        "/"
    );
    // Once only: the page and the form now refuse the link.
    assert_eq!(app.get(&path).await.status(), StatusCode::NOT_FOUND);
    let to = accept(app, &path, "another password", "another password").await;
    assert!(to.contains("error=invitation+not+found"), "{to}");

    // A new link for an account in use is refused; an unknown user is not found.
    let again = call(&op, app, Method::POST, "/api/v1/users/dev/invite", None).await;
    assert_eq!(again.status(), StatusCode::CONFLICT);
    let nobody = call(&op, app, Method::POST, "/api/v1/users/nobody/invite", None).await;
    assert_eq!(nobody.status(), StatusCode::NOT_FOUND);

    // A second invitation replaces the first.
    let res = call(
        &op,
        app,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "late"})),
    )
    .await;
    let first: Value = res.json().await.unwrap();
    let res = call(&op, app, Method::POST, "/api/v1/users/late/invite", None).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let second: Value = res.json().await.unwrap();
    let first_path = first["invitation"]["path"].as_str().unwrap();
    assert_eq!(app.get(first_path).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        app.get(second["path"].as_str().unwrap()).await.status(),
        StatusCode::OK
    );

    // With a password: ready at once.
    let res = call(
        &op,
        app,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "ops2", "operator": true, "password": PASSWORD})),
    )
    .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(
        (
            &created["user"]["status"],
            &created["user"]["operator"],
            &created["invitation"]
        ),
        (&json!("active"), &json!(true), &Value::Null)
    );
    let dup = call(
        &op,
        app,
        Method::POST,
        "/api/v1/users",
        Some(json!({"username": "ops2"})),
    )
    .await;
    assert_eq!(dup.status(), StatusCode::CONFLICT);
    for bad in [
        json!({"username": "two words"}),
        json!({"username": "x", "password": "short"}),
        json!({"username": "x", "email": "not-an-address"}),
        json!({"username": 7}),
    ] {
        let res = call(&op, app, Method::POST, "/api/v1/users", Some(bad.clone())).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{bad}");
    }

    let list: Value = call(&op, app, Method::GET, "/api/v1/users", None)
        .await
        .json()
        .await
        .unwrap();
    let rows: Vec<(String, String)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["username"].as_str().unwrap().to_owned(),
                u["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let want = [
        ("dev", "active"),
        ("late", "invited"),
        ("ops2", "active"),
        ("root", "active"),
    ];
    assert_eq!(
        rows,
        want.map(|(a, b)| (a.to_owned(), b.to_owned())),
        "{list}"
    );
    assert!(list[0]["last_login_at"].is_string(), "dev signed in");

    // Audited: created, invited, accepted, and the refused attempts.
    let events = app
        .audit(AuditQuery {
            action: Some("user.".into()),
            ..Default::default()
        })
        .await;
    let has = |action: &str, target: &str, outcome: Outcome| {
        events
            .iter()
            .any(|e| e.action == action && e.target == target && e.outcome == outcome)
    };
    assert!(has("user.create", "dev", Outcome::Success));
    assert!(has("user.invite", "late", Outcome::Success));
    assert!(has("user.invite.accept", "dev", Outcome::Success));
    assert!(has("user.invite.accept", "invitation", Outcome::Denied));
    assert!(has("user.invite", "dev", Outcome::Failure));

    // The portal's users page lists them, with the new link shown once after an invitation.
    let page = app.get_as(&op, "/admin/users").await.text().await.unwrap();
    assert!(page.contains(r#"id="user-table""#) && page.contains(r#"data-user="late""#));
    let res = op
        .post(format!("{}/sfn/create_user", app.url))
        .form(&[("username", "web"), ("how", "invite")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/admin/users");
    let page = app.get_as(&op, "/admin/users").await.text().await.unwrap();
    assert!(
        page.contains(r#"id="invite-link""#) && page.contains("/invite/kqi_"),
        "{page}"
    );
    let page = app.get_as(&op, "/admin/users").await.text().await.unwrap();
    assert!(!page.contains(r#"id="invite-link""#), "shown once");

    // A refused create comes back as typed, the error at its field, without the password.
    let res = op
        .post(format!("{}/sfn/create_user", app.url))
        .form(&[
            ("username", "webby"),
            ("display_name", "Web Team"),
            ("email", "web@example.test"),
            ("how", "password"),
            ("password", "short"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/admin/users");
    let page = app.get_as(&op, "/admin/users").await.text().await.unwrap();
    assert!(
        page.contains(r#"value="Web Team""#)
            && page.contains(r#"value="web@example.test""#)
            && page.contains(r#"id="user-password-error""#)
            && page.contains("Must be at least 12 characters")
            && page.contains(r#"value="webby""#),
        "{page}"
    );
    assert!(
        !page.contains(r#"value="short""#),
        "the password is never kept"
    );
}

async fn only_operators_manage_users(app: &TestApp) {
    app.seed_tenant("team-a", "Team A").await;
    let admin = app.user("lead", false, &[("team-a", "admin")]).await;
    let member = app.user("amy", false, &[("team-a", "member")]).await;
    for who in [&admin, &member] {
        for (method, path, body) in [
            (Method::GET, "/api/v1/users", None),
            (
                Method::POST,
                "/api/v1/users",
                Some(json!({"username": "evil-op", "operator": true})),
            ),
            (
                Method::POST,
                "/api/v1/users",
                Some(json!({"username": "evil", "password": PASSWORD})),
            ),
            (Method::POST, "/api/v1/users/amy/invite", None),
        ] {
            let res = call(who, app, method.clone(), path, body).await;
            assert_eq!(res.status(), StatusCode::FORBIDDEN, "{method} {path}");
        }
        let res = who
            .post(format!("{}/sfn/create_user", app.url))
            .form(&[("username", "evil-op"), ("operator", "true")])
            .send()
            .await
            .unwrap();
        assert!(res.headers()["location"]
            .to_str()
            .unwrap()
            .contains("error=permission+denied"));
        let page = app.get_as(who, "/admin/users").await.text().await.unwrap();
        assert!(!page.contains("user-table") && page.contains("permission denied"));
    }
    let anonymous = app.browser();
    let res = call(&anonymous, app, Method::GET, "/api/v1/users", None).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let events = app
        .audit(AuditQuery {
            action: Some("user.create".into()),
            ..Default::default()
        })
        .await;
    assert!(events
        .iter()
        .all(|e| e.outcome == Outcome::Denied || e.actor == "system"));
    assert!(events
        .iter()
        .any(|e| e.target == "evil-op" && e.actor == "lead"));

    // The tenant admin's member form offers their tenant's people, and takes a new name.
    let page = app
        .get_as(&admin, "/tenants/team-a")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"list="known-users""#), "{page}");
    assert!(page.contains(r#"<option value="amy">"#), "{page}");
    let res = admin
        .post(format!("{}/sfn/put_member", app.url))
        .form(&[
            ("tenant", "team-a"),
            ("username", "later"),
            ("role", "member"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(res.headers()["location"], "/tenants/team-a");
    let page = app
        .get_as(&admin, "/tenants/team-a")
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"data-member="later""#));
}

async fn an_empty_installation_shows_the_operator_a_checklist(app: &TestApp) {
    let op = app.user("root", true, &[]).await;
    let html = app.get_as(&op, "/").await.text().await.unwrap();
    assert!(html.contains(r#"id="first-run""#), "{html}");
    for step in ["tenant", "provider", "template", "people"] {
        assert!(
            html.contains(&format!(r#"data-step="{step}" data-done="false""#)),
            "{step}: {html}"
        );
    }
    assert!(html.contains(r#"href="/admin/users""#));
    assert!(html.contains("There are no tenants yet"), "{html}");
    let request = app.get_as(&op, "/clusters/new").await.text().await.unwrap();
    assert!(request.contains(r#"id="no-tenant""#) && request.contains(r#"href="/admin""#));

    app.seed_tenant("team-a", "Team A").await;
    let html = app.get_as(&op, "/").await.text().await.unwrap();
    assert!(
        html.contains(r#"data-step="tenant" data-done="true""#),
        "{html}"
    );

    // A member with no tenant is told who adds them, and sees no checklist.
    let lonely = app.user("lonely", false, &[]).await;
    let html = app.get_as(&lonely, "/").await.text().await.unwrap();
    assert!(!html.contains(r#"id="first-run""#));
    assert!(html.contains("You belong to no tenant yet"), "{html}");
    assert!(
        !html.contains("Database"),
        "no installation figures for members"
    );
    let request = app
        .get_as(&lonely, "/clusters/new")
        .await
        .text()
        .await
        .unwrap();
    assert!(request.contains("You belong to no tenant yet"), "{request}");
}

macro_rules! on_both_databases {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test] async fn $name() {
                let app = super::TestApp::sqlite().await;
                super::$name(&app).await;
                app.stop().await;
            })*
        }
        mod postgres {
            $(#[tokio::test] async fn $name() {
                let Some(app) = super::TestApp::postgres().await else { return };
                super::$name(&app).await;
                app.stop().await;
            })*
        }
    };
}

on_both_databases!(
    operators_invite_people_who_then_set_their_password,
    only_operators_manage_users,
    an_empty_installation_shows_the_operator_a_checklist,
);
