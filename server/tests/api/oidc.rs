//! Single sign-on against a real OpenID Provider (npm oidc-provider): the whole login over
//! HTTP, logout through the provider, and the attacks a relying party must resist.

use base64::Engine;
use kqueen_core::audit::{AuditQuery, Outcome};
use kqueen_server::auth::oidc::{Oidc, OidcConfig};
use kqueen_testkit::TestDatabase;
use reqwest::header::{HeaderValue, ORIGIN, SET_COOKIE};
use reqwest::StatusCode;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::helpers::TestApp;
use crate::provider::{browser, walk, Provider};

const GROUP_MAP: &str = "team-a=team-a:member,team-b=team-b:member,kaas-admins=*:operator";

pub(crate) async fn sso_app(provider: &Provider) -> TestApp {
    let issuer = provider.issuer.clone();
    TestApp::spawn(TestDatabase::sqlite(), move |s, addr| {
        s.oidc_issuer_url = Some(issuer);
        s.oidc_client_id = Some("kqueen".into());
        s.oidc_client_secret = Some("kqueen-secret".to_owned().into());
        s.group_map = GROUP_MAP.into();
        s.public_url = Some(format!("http://{addr}"));
    })
    .await
}

fn session_cookie(res: &reqwest::Response) -> Option<String> {
    res.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.starts_with("kqueen_session="))
        .map(str::to_owned)
}

fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// Logs `user` in through the provider; returns the callback URL the provider sent back.
async fn sso_login(
    app: &TestApp,
    provider: &Provider,
    client: &reqwest::Client,
    user: &str,
    password: &str,
) -> String {
    let res = app.get_as(client, "/auth/login?next=/tokens").await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    let to_provider = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(to_provider.starts_with(&provider.issuer), "{to_provider}");
    walk(
        client,
        &to_provider,
        user,
        password,
        &format!("{}/auth/callback", app.url),
    )
    .await
    .unwrap()
}

async fn login_failures(app: &TestApp) -> Vec<String> {
    let q = AuditQuery {
        action: Some("auth.login".into()),
        ..Default::default()
    };
    let events = app.audit(q).await;
    events
        .into_iter()
        .filter(|e| e.outcome == Outcome::Failure)
        .map(|e| e.detail.unwrap_or_default())
        .collect()
}

#[tokio::test]
async fn sso_login_lands_in_the_mapped_tenant_and_logout_ends_both_sessions() {
    let provider = Provider::start();
    let app = sso_app(&provider).await;
    let client = browser();

    let login_page = app.get_as(&client, "/login").await.text().await.unwrap();
    assert!(login_page.contains("sso-login"), "{login_page}");

    let res = app.get_as(&client, "/auth/login?next=/tokens").await;
    let to_provider = res.headers()["location"].to_str().unwrap().to_owned();
    for (param, expected) in [
        ("response_type", "code"),
        ("code_challenge_method", "S256"),
        ("client_id", "kqueen"),
    ] {
        assert_eq!(
            query_param(&to_provider, param).as_deref(),
            Some(expected),
            "{param}"
        );
    }
    for param in ["state", "nonce", "code_challenge"] {
        assert!(
            query_param(&to_provider, param).is_some_and(|v| v.len() >= 16),
            "{param}"
        );
    }
    assert!(query_param(&to_provider, "scope")
        .unwrap()
        .contains("groups"));
    let before = session_cookie(&res).expect("a session holds the pending login");
    assert!(
        before.contains("HttpOnly") && before.contains("SameSite=Lax"),
        "{before}"
    );
    assert!(!before.contains("Secure"), "plain http here");

    // A wrong password is refused by the provider's own form.
    let refused = walk(&client, &to_provider, "alice", "wrong", "http://nowhere")
        .await
        .unwrap_err();
    assert!(refused.contains("Invalid username or password"));
    let callback = walk(
        &client,
        &to_provider,
        "alice",
        "alice-pw",
        &format!("{}/auth/callback", app.url),
    )
    .await
    .unwrap();
    assert_eq!(
        query_param(&callback, "iss").as_deref(),
        Some(provider.issuer.as_str()),
        "RFC 9207"
    );

    let res = client.get(&callback).send().await.unwrap();
    assert_eq!(
        res.headers()["location"],
        "/tokens",
        "back where the login started"
    );
    let after = session_cookie(&res).expect("a new session id at login");
    assert_ne!(
        before.split(';').next(),
        after.split(';').next(),
        "session id rotated at login"
    );

    let me: Value = app
        .get_as(&client, "/api/v1/whoami")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me["username"], "alice");
    assert_eq!(me["email"], "alice@example.test");
    assert_eq!(me["operator"], false);
    assert_eq!(
        me["tenants"],
        serde_json::json!([{ "tenant": "team-a", "role": "member" }])
    );
    let html = app.get_as(&client, "/").await.text().await.unwrap();
    assert!(html.contains(r#"data-tenant="team-a""#), "{html}");

    // Logout: the portal session ends, then the provider's (RP-initiated logout).
    let res = client
        .post(format!("{}/auth/logout", app.url))
        .header(ORIGIN, HeaderValue::from_str(&app.url).unwrap())
        .send()
        .await
        .unwrap();
    let end_session = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        end_session.starts_with(&format!("{}/session/end", provider.issuer)),
        "{end_session}"
    );
    assert_eq!(
        query_param(&end_session, "post_logout_redirect_uri").as_deref(),
        Some(format!("{}/login?logged_out=1", app.url).as_str())
    );
    let res = app.get_as(&client, "/api/v1/whoami").await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let page = client
        .get(&end_session)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let xsrf = page
        .split(r#"name="xsrf" value=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("xsrf");
    let res = client
        .post(format!("{}/session/end/confirm", provider.issuer))
        .form(&[("xsrf", xsrf), ("logout", "yes")])
        .send()
        .await
        .unwrap();
    let back = res.headers()["location"].to_str().unwrap();
    assert!(
        back.starts_with(&format!("{}/login?logged_out=1", app.url)),
        "{back}"
    );
    // The provider forgot alice: a new login asks for the password again.
    let res = app.get_as(&client, "/auth/login").await;
    let url = res.headers()["location"].to_str().unwrap().to_owned();
    assert!(walk(&client, &url, "alice", "nope", "http://nowhere")
        .await
        .is_err());

    let events = app
        .audit(AuditQuery {
            actor: Some("alice".into()),
            ..Default::default()
        })
        .await;
    let actions: Vec<_> = events.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["auth.logout", "auth.login"]);
    assert!(events
        .iter()
        .all(|e| e.source_ip.as_deref() == Some("127.0.0.1")));
    app.stop().await;
}

#[tokio::test]
async fn groups_decide_the_operator_role_at_every_login() {
    let provider = Provider::start();
    let app = sso_app(&provider).await;
    let client = browser();
    let callback = sso_login(&app, &provider, &client, "bob", "bob-pw").await;
    client.get(&callback).send().await.unwrap();
    let me: Value = app
        .get_as(&client, "/api/v1/whoami")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (me["username"].as_str(), me["operator"].as_bool()),
        (Some("bob"), Some(true))
    );
    let tenants: Value = app
        .get_as(&client, "/api/v1/tenants")
        .await
        .json()
        .await
        .unwrap();
    assert!(tenants.as_array().is_some(), "operators list all tenants");
    app.stop().await;
}

#[tokio::test]
async fn forged_replayed_and_mismatched_callbacks_are_refused_and_audited() {
    let provider = Provider::start();
    let app = sso_app(&provider).await;
    let client = browser();
    let callback_base = format!("{}/auth/callback", app.url);
    let start = |client: &reqwest::Client| {
        let url = format!("{}/auth/login", app.url);
        let client = client.clone();
        async move {
            let res = client.get(url).send().await.unwrap();
            res.headers()["location"].to_str().unwrap().to_owned()
        }
    };
    // Requests the callback at `url` and expects the login to be refused.
    let refused = |url: String| {
        let client = client.clone();
        async move {
            let res = client.get(url).send().await.unwrap();
            assert_eq!(res.headers()["location"], "/login?error=sso");
        }
    };

    // No login in progress at all.
    refused(format!("{callback_base}?code=x&state=y")).await;
    // Wrong state.
    start(&client).await;
    let iss = &provider.issuer;
    refused(format!("{callback_base}?code=x&state=forged&iss={iss}")).await;
    // Right state, wrong issuer (mix-up attack).
    let state = query_param(&start(&client).await, "state").unwrap();
    refused(format!(
        "{callback_base}?code=x&state={state}&iss=http://evil.test"
    ))
    .await;
    // Right state, error from the provider.
    let state = query_param(&start(&client).await, "state").unwrap();
    refused(format!(
        "{callback_base}?error=access_denied&state={state}&iss={iss}"
    ))
    .await;

    // A real login, then its callback replayed, then its code replayed with a fresh state.
    let callback = sso_login(&app, &provider, &client, "alice", "alice-pw").await;
    let res = client.get(&callback).send().await.unwrap();
    assert_eq!(res.headers()["location"], "/tokens");
    refused(callback.clone()).await;
    let code = query_param(&callback, "code").unwrap();
    let state = query_param(&start(&client).await, "state").unwrap();
    refused(format!(
        "{callback_base}?code={code}&state={state}&iss={iss}"
    ))
    .await;

    let failures = login_failures(&app).await;
    let expect = [
        "code exchange failed",
        "no login in progress",
        "provider answered with an error",
        "issuer mismatch",
        "state mismatch",
        "no login in progress",
    ];
    assert_eq!(failures.len(), expect.len(), "{failures:?}");
    for (detail, expected) in failures.iter().zip(expect) {
        assert!(detail.contains(expected), "{detail} should say {expected}");
    }
    app.stop().await;
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[tokio::test]
async fn id_tokens_with_a_wrong_nonce_or_tampered_claims_are_rejected() {
    let provider = Provider::start();
    // A real ID token from the provider, obtained as the portal would (code flow with PKCE).
    let redirect = "http://127.0.0.1:9/auth/callback";
    let verifier = "a-test-verifier-that-is-long-enough-0123456789";
    let challenge = b64(&Sha256::digest(verifier.as_bytes()));
    let nonce = "nonce-0123456789abcdef";
    let authorize = format!(
        "{}/auth?response_type=code&client_id=kqueen&redirect_uri={}&scope=openid%20profile%20email%20groups\
         &state=s0123456789abcdef&nonce={nonce}&code_challenge={challenge}&code_challenge_method=S256",
        provider.issuer,
        url::form_urlencoded::byte_serialize(redirect.as_bytes()).collect::<String>()
    );
    let client = browser();
    let back = walk(&client, &authorize, "alice", "alice-pw", redirect)
        .await
        .unwrap();
    let code = query_param(&back, "code").unwrap();
    let tokens: Value = client
        .post(format!("{}/token", provider.issuer))
        .basic_auth("kqueen", Some("kqueen-secret"))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id_token = tokens["id_token"].as_str().unwrap().to_owned();

    let oidc = Oidc::new(oidc_config(&provider)).unwrap();
    let login = oidc
        .verify_id_token(&id_token, nonce)
        .await
        .expect("the genuine token verifies");
    assert_eq!(
        (login.subject.as_str(), login.groups.as_slice()),
        ("alice", ["team-a".to_owned()].as_slice())
    );

    assert!(
        oidc.verify_id_token(&id_token, "another-nonce")
            .await
            .is_err(),
        "wrong nonce"
    );
    let parts: Vec<&str> = id_token.split('.').collect();
    let mut claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[1])
            .unwrap(),
    )
    .unwrap();
    claims["groups"] = serde_json::json!(["kaas-admins"]);
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(claims.to_string().as_bytes()),
        parts[2]
    );
    assert!(
        oidc.verify_id_token(&tampered, nonce).await.is_err(),
        "tampered claims"
    );
    let unsigned = format!("{}.{}.", b64(br#"{"alg":"none"}"#), parts[1]);
    assert!(
        oidc.verify_id_token(&unsigned, nonce).await.is_err(),
        "alg none"
    );
    let other_audience = Oidc::new(OidcConfig {
        client_id: "someone-else".into(),
        ..oidc_config(&provider)
    })
    .unwrap();
    assert!(
        other_audience
            .verify_id_token(&id_token, nonce)
            .await
            .is_err(),
        "wrong audience"
    );
}

fn oidc_config(provider: &Provider) -> OidcConfig {
    OidcConfig {
        issuer: provider.issuer.clone(),
        client_id: "kqueen".into(),
        client_secret: "kqueen-secret".to_owned().into(),
        scopes: vec!["openid".into()],
        groups_claim: "groups".into(),
        userinfo: false,
        redirect_url: "http://127.0.0.1:9/auth/callback".into(),
    }
}
