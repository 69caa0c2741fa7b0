//! People as the identity provider would log them in.

use kqueen_core::{Actor, ExternalLogin, Kqueen};

/// `subject` logged in through the test identity provider with one `group` (mapped to a
/// tenant role by the portal's group map).
pub async fn login(k: &Kqueen, subject: &str, group: &str) -> Actor {
    let login = ExternalLogin {
        issuer: "http://idp.test".into(),
        subject: subject.into(),
        preferred_username: Some(subject.into()),
        groups: vec![group.into()],
        ..Default::default()
    };
    Actor::user(
        k.auth()
            .login_external(&login, None)
            .await
            .expect("log in through the test identity provider"),
    )
}
