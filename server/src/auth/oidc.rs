//! OpenID Connect login: discovery, authorization code flow with PKCE (S256), state and nonce,
//! ID token verification (signature, issuer, audience, expiry, nonce), the RFC 9207 `iss`
//! parameter, userinfo, and RP-initiated logout.

use std::collections::HashMap;
use std::str::FromStr;

use base64::Engine;
use kqueen_core::ExternalLogin;
use openidconnect::core::{
    CoreAuthDisplay, CoreClaimName, CoreClaimType, CoreClient, CoreClientAuthMethod,
    CoreGenderClaim, CoreGrantType, CoreIdToken, CoreJsonWebKey, CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm, CoreResponseMode, CoreResponseType, CoreSubjectIdentifierType,
};
use openidconnect::{
    AccessToken, AdditionalClaims, AdditionalProviderMetadata, AuthenticationFlow,
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointMaybeSet, EndpointNotSet,
    EndpointSet, IssuerUrl, Nonce, OAuth2TokenResponse, PkceCodeChallenge, PkceCodeVerifier,
    ProviderMetadata, RedirectUrl, Scope, TokenResponse,
};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::OnceCell;
use url::Url;

/// Provider metadata KQueen reads beyond the core set.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub(super) struct ExtraMetadata {
    end_session_endpoint: Option<Url>,
    /// RFC 8628: where a device flow starts (providers that offer one say so).
    pub(super) device_authorization_endpoint: Option<Url>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: bool,
}
impl AdditionalProviderMetadata for ExtraMetadata {}

type Metadata = ProviderMetadata<
    ExtraMetadata,
    CoreAuthDisplay,
    CoreClientAuthMethod,
    CoreClaimName,
    CoreClaimType,
    CoreGrantType,
    CoreJweContentEncryptionAlgorithm,
    CoreJweKeyManagementAlgorithm,
    CoreJsonWebKey,
    CoreResponseMode,
    CoreResponseType,
    CoreSubjectIdentifierType,
>;

pub(super) type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

/// Every claim of a userinfo answer (the groups claim's name is configuration).
#[derive(Clone, Debug, Deserialize, Serialize)]
struct AllClaims(HashMap<String, Value>);
impl AdditionalClaims for AllClaims {}

/// How to reach and use the identity provider.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: SecretString,
    pub scopes: Vec<String>,
    pub groups_claim: String,
    pub userinfo: bool,
    pub redirect_url: String,
}

/// Why a login failed. Messages are for logs and the audit trail; they hold no secrets.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("identity provider unavailable: {0}")]
    Discovery(String),
    #[error("the identity provider answered with an error: {0}")]
    Provider(String),
    #[error("no login in progress (expired, or the callback was replayed)")]
    NoPendingLogin,
    #[error("state mismatch")]
    State,
    #[error("issuer mismatch in the authorization response")]
    Issuer,
    #[error("authorization code missing")]
    MissingCode,
    #[error("code exchange failed: {0}")]
    Exchange(String),
    #[error("ID token invalid: {0}")]
    IdToken(String),
    #[error("userinfo failed: {0}")]
    UserInfo(String),
    #[error("configuration: {0}")]
    Config(String),
}

pub(super) struct Discovered {
    pub(super) client: Client,
    pub(super) extra: ExtraMetadata,
}

/// The portal's OpenID Connect relying party. Discovery happens at the first login (and is
/// retried at the next one if the provider was down).
pub struct Oidc {
    pub(super) config: OidcConfig,
    pub(super) http: reqwest::Client,
    discovered: OnceCell<Discovered>,
}

/// What the session keeps between the redirect to the provider and the callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingLogin {
    pub state: String,
    pub nonce: String,
    pub pkce_verifier: String,
    /// Where to go after login (a local path).
    pub next: String,
}

/// Query parameters of the callback.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct CallbackParams {
    pub code: Option<String>,
    pub state: Option<String>,
    pub iss: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Oidc {
    pub fn new(config: OidcConfig) -> Result<Self, OidcError> {
        // No redirects: a token endpoint must answer itself (and no SSRF through redirects).
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| OidcError::Config(e.to_string()))?;
        Ok(Self {
            config,
            http,
            discovered: OnceCell::new(),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.config.issuer
    }

    pub(super) async fn discovered(&self) -> Result<&Discovered, OidcError> {
        self.discovered
            .get_or_try_init(|| async {
                let issuer = IssuerUrl::new(self.config.issuer.clone())
                    .map_err(|e| OidcError::Config(format!("issuer URL: {e}")))?;
                let metadata = Metadata::discover_async(issuer, &self.http)
                    .await
                    .map_err(|e| OidcError::Discovery(error_chain(&e)))?;
                let extra = metadata.additional_metadata().clone();
                let redirect = RedirectUrl::new(self.config.redirect_url.clone())
                    .map_err(|e| OidcError::Config(format!("redirect URL: {e}")))?;
                let client = CoreClient::from_provider_metadata(
                    metadata,
                    ClientId::new(self.config.client_id.clone()),
                    Some(ClientSecret::new(
                        self.config.client_secret.expose_secret().to_owned(),
                    )),
                )
                .set_redirect_uri(redirect);
                tracing::info!(issuer = %self.config.issuer, "identity provider discovered");
                Ok(Discovered { client, extra })
            })
            .await
    }

    /// The provider's authorization URL for a new login, and what to keep until the callback.
    pub async fn start(&self, next: String) -> Result<(Url, PendingLogin), OidcError> {
        let d = self.discovered().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = d.client.authorize_url(
            AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in self.config.scopes.iter().filter(|s| s.as_str() != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        let pending = PendingLogin {
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            pkce_verifier: verifier.secret().clone(),
            next,
        };
        Ok((url, pending))
    }

    /// Completes a login from the callback: checks state and issuer, exchanges the code with
    /// the PKCE verifier, verifies the ID token, and reads the user's claims.
    pub async fn finish(
        &self,
        pending: &PendingLogin,
        params: &CallbackParams,
    ) -> Result<ExternalLogin, OidcError> {
        let d = self.discovered().await?;
        if let Some(error) = &params.error {
            let description = params.error_description.as_deref().unwrap_or_default();
            return Err(OidcError::Provider(
                format!("{error} {description}").trim().to_owned(),
            ));
        }
        if params.state.as_deref() != Some(pending.state.as_str()) {
            return Err(OidcError::State);
        }
        // RFC 9207: compare when present; require when the provider says it sends it.
        match &params.iss {
            Some(iss) if iss != &self.config.issuer => return Err(OidcError::Issuer),
            None if d.extra.authorization_response_iss_parameter_supported => {
                return Err(OidcError::Issuer)
            }
            _ => {}
        }
        let code = params.code.clone().ok_or(OidcError::MissingCode)?;
        let response = d
            .client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| OidcError::Config(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(pending.pkce_verifier.clone()))
            .request_async(&self.http)
            .await
            .map_err(|e| OidcError::Exchange(error_chain(&e)))?;
        let id_token = response
            .id_token()
            .ok_or_else(|| OidcError::IdToken("missing".into()))?;
        let login = self
            .verify_id_token(&id_token.to_string(), &pending.nonce)
            .await?;
        self.with_userinfo(response.access_token().clone(), login)
            .await
    }

    /// `login` completed from the userinfo endpoint (groups, e-mail, username), when the
    /// configuration asks for it and the provider has one.
    pub(super) async fn with_userinfo(
        &self,
        access_token: AccessToken,
        mut login: ExternalLogin,
    ) -> Result<ExternalLogin, OidcError> {
        let d = self.discovered().await?;
        if self.config.userinfo && d.client.user_info_url().is_some() {
            let claims = d
                .client
                .user_info(access_token, None)
                .map_err(|e| OidcError::UserInfo(e.to_string()))?
                .request_async::<AllClaims, _, CoreGenderClaim>(&self.http)
                .await
                .map_err(|e| OidcError::UserInfo(error_chain(&e)))?;
            if claims.subject().as_str() != login.subject {
                return Err(OidcError::UserInfo(
                    "subject differs from the ID token".into(),
                ));
            }
            let extra = &claims.additional_claims().0;
            if let Some(groups) = extra.get(&self.config.groups_claim) {
                login.groups = groups_of(groups);
            }
            login.email = login
                .email
                .or_else(|| claims.email().map(|e| e.as_str().to_owned()));
            login.preferred_username = login
                .preferred_username
                .or_else(|| claims.preferred_username().map(|u| u.as_str().to_owned()));
        }
        Ok(login)
    }

    /// Verifies a raw ID token (signature with the provider's keys, issuer, audience, expiry,
    /// nonce) and reads the user from it.
    pub async fn verify_id_token(
        &self,
        raw: &str,
        nonce: &str,
    ) -> Result<ExternalLogin, OidcError> {
        self.verify_id_token_with(raw, &Nonce::new(nonce.to_owned()))
            .await
    }

    /// [`Self::verify_id_token`] with any nonce check (a device flow has no nonce).
    pub(super) async fn verify_id_token_with(
        &self,
        raw: &str,
        nonce: impl openidconnect::NonceVerifier,
    ) -> Result<ExternalLogin, OidcError> {
        let d = self.discovered().await?;
        let token = CoreIdToken::from_str(raw).map_err(|e| OidcError::IdToken(e.to_string()))?;
        let claims = token
            .claims(&d.client.id_token_verifier(), nonce)
            .map_err(|e| OidcError::IdToken(error_chain(&e)))?;
        // The payload's signature was just verified: read the (custom) groups claim from it.
        let payload = raw.split('.').nth(1).unwrap_or_default();
        let json: Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b: Vec<u8>| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        let groups = json
            .get(&self.config.groups_claim)
            .map(groups_of)
            .unwrap_or_default();
        Ok(ExternalLogin {
            issuer: self.config.issuer.clone(),
            subject: claims.subject().as_str().to_owned(),
            preferred_username: claims.preferred_username().map(|u| u.as_str().to_owned()),
            email: claims.email().map(|e| e.as_str().to_owned()),
            name: claims
                .name()
                .and_then(|n| n.get(None))
                .map(|n| n.as_str().to_owned()),
            groups,
        })
    }

    /// The provider's logout URL (RP-initiated logout), when it has one.
    pub async fn logout_url(&self, post_logout_redirect: &str) -> Option<Url> {
        let d = self.discovered().await.ok()?;
        let mut url = d.extra.end_session_endpoint.clone()?;
        url.query_pairs_mut()
            .append_pair("client_id", &self.config.client_id)
            .append_pair("post_logout_redirect_uri", post_logout_redirect);
        Some(url)
    }
}

/// A groups claim: a list of strings, or one string.
fn groups_of(v: &Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .iter()
            .filter_map(|g| g.as_str().map(str::to_owned))
            .collect(),
        Value::String(s) => vec![s.clone()],
        _ => Vec::new(),
    }
}

pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
