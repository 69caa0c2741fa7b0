//! `kqueen login` from a terminal: the identity provider's device flow (RFC 8628) through the
//! portal's open routes, against the real OpenID provider (npm oidc-provider), its pages
//! walked over HTTP as a person would.

use kqueen_core::audit::{AuditQuery, Outcome};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::TestApp;
use crate::oidc::sso_app;
use crate::provider::{browser, walk_device, Device, Provider};

async fn start(app: &TestApp) -> (StatusCode, Value) {
    let res = reqwest::Client::new()
        .post(format!("{}/api/v1/login/device", app.url))
        .send()
        .await
        .unwrap();
    (res.status(), res.json().await.unwrap())
}

async fn poll(app: &TestApp, body: Value) -> (StatusCode, Value) {
    let res = reqwest::Client::new()
        .post(format!("{}/api/v1/login/device/token", app.url))
        .json(&body)
        .send()
        .await
        .unwrap();
    if res.status() == StatusCode::OK {
        assert_eq!(
            res.headers()["cache-control"],
            "no-store",
            "a secret is not cached"
        );
    }
    (res.status(), res.json().await.unwrap())
}

/// `GET path` with a bearer token, as JSON.
async fn bearer_get(app: &TestApp, token: &str, path: &str) -> Value {
    let res = reqwest::Client::new()
        .get(format!("{}{path}", app.url))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    res.json().await.unwrap()
}

async fn logins(app: &TestApp) -> Vec<(String, Outcome, String)> {
    let q = AuditQuery {
        action: Some("auth.login".into()),
        ..Default::default()
    };
    let events = app.audit(q).await;
    events
        .into_iter()
        .map(|e| (e.target, e.outcome, e.detail.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn a_device_login_ends_in_a_personal_token_of_the_person_who_signed_in() {
    let provider = Provider::start();
    let app = sso_app(&provider).await;
    let (status, started) = start(&app).await;
    assert_eq!(status, StatusCode::OK, "{started}");
    let code = started["device_code"].as_str().unwrap().to_owned();
    let user_code = started["user_code"].as_str().unwrap().to_owned();
    let page = started["verification_uri"].as_str().unwrap();
    assert!(page.starts_with(&provider.issuer), "{started}");
    assert!(started["interval"].as_u64().unwrap() >= 1);
    assert!(started["expires_in"].as_u64().unwrap() > 60);
    let ask = json!({"device_code": code, "name": "laptop of alice", "days": 7});

    // Before the person signs in: not yet.
    let (status, pending) = poll(&app, ask.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{pending}");
    assert_eq!(pending["status"], "pending");

    // Alice opens the page, types the code, signs in and consents.
    walk_device(
        &browser(),
        page,
        "alice",
        "alice-pw",
        Device::Type(&user_code),
    )
    .await
    .unwrap();
    let (status, done) = poll(&app, ask.clone()).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["username"], "alice");
    assert_eq!(done["token"]["name"], "laptop of alice");
    let secret = done["secret"].as_str().unwrap();
    let me = bearer_get(&app, secret, "/api/v1/whoami").await;
    assert_eq!(me["username"], "alice");
    assert_eq!(me["tenants"][0]["tenant"], "team-a", "groups mapped: {me}");
    let tokens = bearer_get(&app, secret, "/api/v1/tokens").await;
    let created = chrono::DateTime::parse_from_rfc3339(tokens[0]["created_at"].as_str().unwrap());
    let expires = chrono::DateTime::parse_from_rfc3339(tokens[0]["expires_at"].as_str().unwrap());
    assert_eq!((expires.unwrap() - created.unwrap()).num_days(), 7);

    // The device code is spent: nobody gets a second token with it.
    let (status, again) = poll(&app, ask).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{again}");
    let logins = logins(&app).await;
    assert!(
        logins
            .iter()
            .any(|(who, outcome, _)| who == "alice" && *outcome == Outcome::Success),
        "{logins:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn refused_unknown_and_malformed_device_logins_get_no_token() {
    let provider = Provider::start();
    let app = sso_app(&provider).await;
    let (_, started) = start(&app).await;
    let page = started["verification_uri_complete"].as_str().unwrap();
    let code = started["device_code"].as_str().unwrap();

    // The person aborts at the provider: the poll says refused, and the refusal is audited.
    let aborted = walk_device(&browser(), page, "alice", "alice-pw", Device::Abort).await;
    assert!(aborted.is_err(), "no success page after an abort");
    let (status, refused) = poll(&app, json!({"device_code": code})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("refused"),
        "{refused}"
    );
    let logins = logins(&app).await;
    assert!(
        logins
            .iter()
            .any(|(_, outcome, detail)| *outcome == Outcome::Failure && detail.contains("refused")),
        "{logins:?}"
    );

    // Codes nobody issued, empty ones and odd bodies.
    let (status, unknown) = poll(&app, json!({"device_code": "no-such-code"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{unknown}");
    for bad in [
        json!({"device_code": ""}),
        json!({"device_code": "a b"}),
        json!({"device_code": "x".repeat(2000)}),
        json!({"device": "x"}),
        json!({"device_code": 5}),
    ] {
        let (status, answer) = poll(&app, bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad} -> {answer}");
        assert!(
            answer["error"].as_str().unwrap().contains("device_code"),
            "{answer}"
        );
    }
    // A good code with a token input the core refuses: 400 naming the field, no token.
    let (_, second) = start(&app).await;
    let code = second["device_code"].as_str().unwrap();
    walk_device(
        &browser(),
        second["verification_uri_complete"].as_str().unwrap(),
        "carol",
        "carol-pw",
        Device::Confirm,
    )
    .await
    .unwrap();
    for bad in [
        json!({"days": 400}),
        json!({"days": 91}),
        json!({"name": ""}),
    ] {
        let mut body = bad.clone();
        body["device_code"] = json!(code);
        let (status, answer) = poll(&app, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad} -> {answer}");
        let field = bad.as_object().unwrap().keys().next().unwrap().clone();
        assert!(
            answer["error"].as_str().unwrap().contains(&field),
            "{answer}"
        );
    }
    // Checked before the provider was asked: the sign-in is still there to be had.
    let (status, done) = poll(&app, json!({"device_code": code, "days": 90})).await;
    assert_eq!(status, StatusCode::OK, "{done}");
    assert_eq!(done["username"], "carol");
    app.stop().await;
}

#[tokio::test]
async fn expired_codes_and_portals_without_a_device_login_say_so() {
    // Codes that live two seconds.
    let provider = Provider::start_with(&[("OIDC_DEVICE_CODE_TTL", "2")]);
    let app = sso_app(&provider).await;
    let (_, started) = start(&app).await;
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let (status, expired) = poll(&app, json!({"device_code": started["device_code"]})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{expired}");
    assert!(
        expired["error"].as_str().unwrap().contains("expired"),
        "{expired}"
    );
    app.stop().await;

    // An identity provider without device logins.
    let provider = Provider::start_with(&[("OIDC_DEVICE_FLOW", "0")]);
    let app = sso_app(&provider).await;
    let (status, answer) = start(&app).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .contains("no device login"),
        "{answer}"
    );
    app.stop().await;

    // No single sign-on at all.
    let app = TestApp::sqlite().await;
    let (status, answer) = start(&app).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("not configured"),
        "{answer}"
    );
    let (status, _) = poll(&app, json!({"device_code": "x"})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// A child process killed when the test ends, whatever happens.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn kqueen_login_signs_in_at_the_identity_provider_from_a_terminal() {
    use std::io::{BufRead, BufReader, Read};
    use std::time::Duration;

    // A portal without single sign-on: `--sso` says so (exit 5) and nothing is saved.
    let laptop = crate::cli::Laptop::new();
    let plain = TestApp::sqlite().await;
    let ran = laptop.kqueen(&["login", &plain.url, "--sso"]).await;
    assert_eq!(ran.code, 5, "{ran:?}");
    assert!(ran.stderr.contains("single sign-on"), "{ran:?}");
    plain.stop().await;
    assert_eq!(laptop.kqueen(&["whoami"]).await.code, 3, "not logged in");

    let provider = Provider::start();
    let app = sso_app(&provider).await;
    let mut login = Running(laptop.spawn_kqueen(&["login", &app.url, "--sso", "--days", "3"]));
    let stderr = login.0.stderr.take().unwrap();
    let (lines, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // The command shows where to sign in and the code.
    let page = tokio::task::spawn_blocking(move || {
        let line = said.recv_timeout(Duration::from_secs(30)).unwrap();
        let page = line
            .split_whitespace()
            .find(|w| w.starts_with("http"))
            .unwrap_or_else(|| panic!("no page in {line:?}"))
            .to_owned();
        assert!(line.contains("code"), "{line}");
        page
    })
    .await
    .unwrap();
    assert!(page.starts_with(&provider.issuer), "{page}");
    walk_device(&browser(), &page, "bob", "bob-pw", Device::Confirm)
        .await
        .unwrap();
    // It notices within its polling interval, saves the token and ends.
    let mut child = login.0.stdout.take().unwrap();
    let out = tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        child.read_to_string(&mut out).unwrap();
        out
    });
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("kqueen login ends after the sign-in")
        .unwrap();
    let status = login.0.wait().unwrap();
    assert!(status.success(), "{status}: {out}");
    assert!(out.contains("as bob"), "{out}");
    let ran = laptop.kqueen(&["whoami", "-o", "json"]).await;
    assert_eq!(ran.code, 0, "{ran:?}");
    let me: Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(me["username"], "bob");
    assert_eq!(me["operator"], true, "kaas-admins map to operators: {me}");

    app.stop().await;
}
