//! Checking an uploaded kubeconfig before KQueen keeps it.
//!
//! A kubeconfig comes from a person's laptop and is used on the KQueen server, so everything
//! that points at the *server's* disk (certificate, key and token files) is refused, and
//! credential plugins (exec, auth-provider) that would run commands on the server are refused
//! unless the provider allows them. What is kept is a minimal single-context kubeconfig: the
//! chosen cluster, user and context only.

mod checks;

use std::fmt;

use kube::config::{Context, Kubeconfig, NamedAuthInfo, NamedCluster};
use kube::config::{KubeconfigError, NamedContext};
use secrecy::ExposeSecret;
use serde::Serialize;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::granit_parser::ErrorKind;

use crate::vault::Secret;
use crate::ValidationError;
use checks::{check_cluster, check_user};

/// Larger uploads are refused before parsing (real kubeconfigs are a few kilobytes).
pub const MAX_KUBECONFIG_BYTES: usize = 1024 * 1024;

/// Deepest nesting of YAML collections accepted (real kubeconfigs nest about 6 levels).
const MAX_DEPTH: usize = 64;
/// Most YAML aliases (`*name`) accepted in one kubeconfig.
const MAX_ALIASES: usize = 100;
/// Most parser events that aliases may replay in all: bounds what aliases expand to, so that
/// a "billion laughs" document is refused after a few thousand steps.
const MAX_REPLAYED_EVENTS: usize = 10_000;

/// How the chosen user authenticates to the API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthKind {
    /// A bearer token.
    Token,
    /// A TLS client certificate and key.
    ClientCertificate,
    /// HTTP basic authentication (username and password).
    Basic,
    /// An exec credential plugin: a command run on the KQueen server.
    Exec,
    /// A legacy auth-provider (oidc, gcp…).
    AuthProvider,
}

impl AuthKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthKind::Token => "token",
            AuthKind::ClientCertificate => "client_certificate",
            AuthKind::Basic => "basic",
            AuthKind::Exec => "exec",
            AuthKind::AuthProvider => "auth_provider",
        }
    }
}

impl fmt::Display for AuthKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A kubeconfig that passed [`parse_kubeconfig`]: one context, its cluster and its user.
/// `Debug` never shows credentials.
#[derive(Clone)]
pub struct ParsedKubeconfig {
    context: String,
    server: String,
    auth: AuthKind,
    ca_data: Option<String>,
    insecure_skip_tls_verify: bool,
    minimal: Kubeconfig,
    yaml: Secret,
}

impl ParsedKubeconfig {
    /// The API server URL (`https://host:port[/path]`).
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The name of the chosen context.
    pub fn context(&self) -> &str {
        &self.context
    }

    pub fn auth_kind(&self) -> AuthKind {
        self.auth
    }

    /// True when the kubeconfig carries the cluster's CA (`certificate-authority-data`).
    pub fn has_ca_data(&self) -> bool {
        self.ca_data.is_some()
    }

    /// The cluster's CA bundle as in the kubeconfig (base64 of PEM), if any.
    pub fn ca_data(&self) -> Option<&str> {
        self.ca_data.as_deref()
    }

    /// True when the kubeconfig disables server certificate checks.
    pub fn insecure_skip_tls_verify(&self) -> bool {
        self.insecure_skip_tls_verify
    }

    /// The minimal single-context kubeconfig (YAML, `current-context` set).
    pub fn to_yaml(&self) -> Secret {
        self.yaml.clone()
    }

    /// The minimal kubeconfig as kube's type (for building a client).
    pub(crate) fn kubeconfig(&self) -> &Kubeconfig {
        &self.minimal
    }

    /// The user's credential when it is one a client can be handed as is (a bearer token, or
    /// a client certificate and key, all inline); None for basic authentication and
    /// credential plugins, which only work where they were configured.
    pub fn static_credential(&self) -> Option<StaticCredential> {
        let auth = self.minimal.auth_infos.first()?.auth_info.as_ref()?;
        match self.auth {
            AuthKind::Token => {
                let token = auth.token.as_ref()?.expose_secret();
                Some(StaticCredential::Token(Secret::new(token.as_bytes())))
            }
            AuthKind::ClientCertificate => Some(StaticCredential::ClientCertificate {
                certificate_data: auth.client_certificate_data.clone()?,
                key_data: Secret::new(auth.client_key_data.as_ref()?.expose_secret().as_bytes()),
            }),
            AuthKind::Basic | AuthKind::Exec | AuthKind::AuthProvider => None,
        }
    }

    /// How this kubeconfig reaches its cluster, credentials aside: what a kubeconfig issued
    /// to someone else for the same cluster must carry over.
    pub fn endpoint(&self) -> ClusterEndpoint {
        let cluster = self
            .minimal
            .clusters
            .first()
            .and_then(|c| c.cluster.clone())
            .unwrap_or_default();
        ClusterEndpoint {
            server: self.server.clone(),
            ca_data: self.ca_data.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            tls_server_name: cluster.tls_server_name.filter(|n| !n.is_empty()),
            proxy_url: cluster.proxy_url.filter(|p| !p.is_empty()),
        }
    }
}

/// A credential that works wherever it is sent ([`ParsedKubeconfig::static_credential`]).
/// `Debug` never shows it.
#[derive(Clone)]
pub enum StaticCredential {
    Token(Secret),
    /// `client-certificate-data` and `client-key-data`: base64 of PEM, as in kubeconfigs.
    ClientCertificate {
        certificate_data: String,
        key_data: Secret,
    },
}

impl fmt::Debug for StaticCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StaticCredential::Token(_) => "StaticCredential::Token(..)",
            StaticCredential::ClientCertificate { .. } => "StaticCredential::ClientCertificate(..)",
        })
    }
}

/// The cluster entry of a kubeconfig without credentials: the server and the TLS and network
/// settings kubectl needs to reach it. File references (`certificate-authority`) never
/// appear: [`parse_kubeconfig`] refuses them, since they name files on the KQueen server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterEndpoint {
    /// The API server URL.
    pub server: String,
    /// The CA bundle, base64 of PEM (`certificate-authority-data`).
    pub ca_data: Option<String>,
    pub insecure_skip_tls_verify: bool,
    /// The name the server certificate is checked against, when not the URL's host.
    pub tls_server_name: Option<String>,
    pub proxy_url: Option<String>,
}

impl ClusterEndpoint {
    /// An endpoint at `server` with the system's trust roots.
    pub fn new(server: impl Into<String>) -> Self {
        Self {
            server: server.into(),
            ..Self::default()
        }
    }

    /// The same endpoint with this CA bundle (base64 of PEM), if any.
    pub fn with_ca_data(mut self, ca_data: Option<&str>) -> Self {
        self.ca_data = ca_data.map(str::to_owned);
        self
    }

    /// As a kubeconfig cluster entry.
    pub(crate) fn to_cluster(&self) -> kube::config::Cluster {
        kube::config::Cluster {
            server: Some(self.server.clone()),
            certificate_authority_data: self.ca_data.clone(),
            insecure_skip_tls_verify: self.insecure_skip_tls_verify.then_some(true),
            tls_server_name: self.tls_server_name.clone(),
            proxy_url: self.proxy_url.clone(),
            ..kube::config::Cluster::default()
        }
    }
}

impl fmt::Debug for ParsedKubeconfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedKubeconfig")
            .field("context", &self.context)
            .field("server", &self.server)
            .field("auth", &self.auth)
            .field("has_ca_data", &self.ca_data.is_some())
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .finish_non_exhaustive()
    }
}

/// The API server URL of the kubeconfig's current context, when it names one that leads to a
/// cluster with a server. (No other checks: see [`parse_kubeconfig`] for those.)
pub fn current_server(config: &Kubeconfig) -> Option<String> {
    let current = config.current_context.as_deref()?;
    let context = config.contexts.iter().find(|c| c.name == current)?;
    let cluster_name = &context.context.as_ref()?.cluster;
    let cluster = config.clusters.iter().find(|c| &c.name == cluster_name)?;
    cluster.cluster.as_ref()?.server.clone()
}

/// Parses and checks a kubeconfig (see the module documentation). `context` picks a context
/// by name; without it the `current-context` is used, or the only context if there is one.
/// Errors name the field `kubeconfig` or `context` and never quote credentials.
pub fn parse_kubeconfig(
    yaml: &str,
    context: Option<&str>,
    allow_exec: bool,
) -> Result<ParsedKubeconfig, ValidationError> {
    let config = read_kubeconfig(yaml)?;

    let named_context = choose_context(&config, context)?;
    let ctx_name = named_context.name.clone();
    let ctx = named_context
        .context
        .clone()
        .ok_or_else(|| invalid(format!("context {} is empty", quote(&ctx_name))))?;

    let named_cluster = config
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .ok_or_else(|| {
            invalid(format!(
                "context {} refers to cluster {}, which is not defined",
                quote(&ctx_name),
                quote(&ctx.cluster)
            ))
        })?;
    let cluster = named_cluster.cluster.clone().unwrap_or_default();
    let server = check_cluster(&cluster, &ctx.cluster)?;

    let user_name = ctx
        .user
        .clone()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| invalid(format!("context {} has no user", quote(&ctx_name))))?;
    let named_user = config
        .auth_infos
        .iter()
        .find(|u| u.name == user_name)
        .ok_or_else(|| {
            invalid(format!(
                "context {} refers to user {}, which is not defined",
                quote(&ctx_name),
                quote(&user_name)
            ))
        })?;
    let user = named_user.auth_info.clone().unwrap_or_default();
    let auth = check_user(&user, &user_name, allow_exec)?;

    let minimal = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        clusters: vec![NamedCluster {
            name: ctx.cluster.clone(),
            cluster: Some(cluster.clone()),
            other: Default::default(),
        }],
        auth_infos: vec![NamedAuthInfo {
            name: user_name.clone(),
            auth_info: Some(user),
            other: Default::default(),
        }],
        contexts: vec![NamedContext {
            name: ctx_name.clone(),
            context: Some(Context {
                cluster: ctx.cluster.clone(),
                user: Some(user_name),
                namespace: ctx.namespace.clone(),
                extensions: None,
                other: Default::default(),
            }),
            other: Default::default(),
        }],
        current_context: Some(ctx_name.clone()),
        ..Kubeconfig::default()
    };
    let text = write_kubeconfig(&minimal)
        .map_err(|_| invalid("could not be written back as a single-context kubeconfig"))?;

    Ok(ParsedKubeconfig {
        context: ctx_name,
        server,
        auth,
        ca_data: cluster.certificate_authority_data.clone(),
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify.unwrap_or(false),
        minimal,
        yaml: Secret::new(text),
    })
}

/// Reads a kubeconfig's YAML, without checking what it says (see [`parse_kubeconfig`] for
/// that). Several YAML documents are merged as kubectl merges files. The YAML is read with
/// limits (size, nesting depth, aliases and what they expand to) so that a hostile upload is
/// refused quickly, and errors name the field `kubeconfig` without quoting the input.
pub fn read_kubeconfig(yaml: &str) -> Result<Kubeconfig, ValidationError> {
    if yaml.len() > MAX_KUBECONFIG_BYTES {
        return Err(invalid(format!(
            "is too large (at most {} KiB)",
            MAX_KUBECONFIG_BYTES / 1024
        )));
    }
    if yaml.trim().is_empty() {
        return Err(invalid("is empty"));
    }
    let documents: Vec<Kubeconfig> =
        serde_saphyr::from_multiple_with_options(yaml, yaml_options()).map_err(yaml_error)?;
    documents
        .into_iter()
        .try_fold(Kubeconfig::default(), Kubeconfig::merge)
        .map_err(merge_error)
}

/// The YAML reader's settings: kube's own reading (YAML 1.1 booleans such as `yes` accepted,
/// as kubectl does) with tighter limits.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    budget.flow_nesting_limit = MAX_DEPTH;
    budget.max_aliases = MAX_ALIASES;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
    options.alias_limits.max_replay_stack_depth = MAX_DEPTH;
    // The snippet would quote the input, which holds credentials.
    options.with_snippet = false;
    options
}

/// A kubeconfig as YAML, `apiVersion` and `kind` first (as kubectl writes them).
pub(crate) fn write_kubeconfig(
    config: &Kubeconfig,
) -> Result<String, serde_saphyr::SerializeError> {
    #[derive(Serialize)]
    struct Written<'a> {
        #[serde(rename = "apiVersion", skip_serializing_if = "Option::is_none")]
        api_version: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<&'a str>,
        #[serde(flatten)]
        rest: Kubeconfig,
    }
    let rest = Kubeconfig {
        api_version: None,
        kind: None,
        ..config.clone()
    };
    // Long values (certificate data, tokens) stay on their key's line, as kubectl writes
    // them: tools and scripts read kubeconfigs line by line.
    let mut options = serde_saphyr::SerializerOptions::default();
    options.prefer_block_scalars = false;
    serde_saphyr::to_string_with_options(
        &Written {
            api_version: config.api_version.as_deref(),
            kind: config.kind.as_deref(),
            rest,
        },
        options,
    )
}

fn choose_context<'a>(
    config: &'a Kubeconfig,
    wanted: Option<&str>,
) -> Result<&'a NamedContext, ValidationError> {
    let find = |name: &str| config.contexts.iter().find(|c| c.name == name);
    if let Some(name) = wanted.map(str::trim).filter(|n| !n.is_empty()) {
        return find(name).ok_or_else(|| {
            ValidationError::new(
                "context",
                format!(
                    "the kubeconfig has no context named {} (it has: {})",
                    quote(name),
                    context_list(config)
                ),
            )
        });
    }
    if let Some(current) = config.current_context.as_deref().filter(|c| !c.is_empty()) {
        return find(current).ok_or_else(|| {
            invalid(format!(
                "current-context {} is not one of its contexts",
                quote(current)
            ))
        });
    }
    match config.contexts.as_slice() {
        [] => Err(invalid("defines no context")),
        [only] => Ok(only),
        _ => Err(ValidationError::new(
            "context",
            format!(
                "the kubeconfig has several contexts and no current-context; choose one of: {}",
                context_list(config)
            ),
        )),
    }
}

/// A YAML error without the parser's message: that message may quote the input, and the
/// input holds credentials. The position is enough to find the mistake.
fn yaml_error(e: serde_saphyr::Error) -> ValidationError {
    let e = match e.without_snippet() {
        serde_saphyr::Error::AliasError { error, .. } => error.as_ref(),
        other => other,
    };
    let position = e
        .location()
        .filter(|l| l.line() > 0)
        .map(|l| format!(" (near line {}, column {})", l.line(), l.column()))
        .unwrap_or_default();
    let limit = match e {
        serde_saphyr::Error::Budget { breach, .. } => match breach {
            BudgetBreach::Depth { .. } => Some(format!("nests deeper than {MAX_DEPTH} levels")),
            BudgetBreach::Aliases { .. } | BudgetBreach::AliasAnchorRatio { .. } => {
                Some(format!("uses more than {MAX_ALIASES} YAML aliases"))
            }
            _ => Some("is too large or too complex once read".to_owned()),
        },
        serde_saphyr::Error::AliasReplayLimitExceeded { .. }
        | serde_saphyr::Error::AliasExpansionLimitExceeded { .. }
        | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
        | serde_saphyr::Error::AliasReplayCounterOverflow { .. } => {
            Some("has YAML aliases that expand to too much".to_owned())
        }
        serde_saphyr::Error::ExternalMessage { source, .. } => match source.as_ref() {
            serde_saphyr::ExternalMessageSource::Parser(scan)
                if matches!(scan.kind(), ErrorKind::RecursionLimitExceeded) =>
            {
                Some(format!("nests deeper than {MAX_DEPTH} levels"))
            }
            _ => None,
        },
        serde_saphyr::Error::DuplicateMappingKey { .. } => {
            Some("repeats a key in one of its mappings".to_owned())
        }
        _ => None,
    };
    match limit {
        Some(what) => invalid(format!("is not a valid kubeconfig: it {what}{position}")),
        None => invalid(format!(
            "is not a valid kubeconfig: YAML with clusters, users and contexts is expected{position}"
        )),
    }
}

fn merge_error(e: KubeconfigError) -> ValidationError {
    match e {
        KubeconfigError::KindMismatch | KubeconfigError::ApiVersionMismatch => {
            invalid("holds several YAML documents that do not agree on kind/apiVersion")
        }
        _ => invalid("is not a valid kubeconfig"),
    }
}

fn context_list(config: &Kubeconfig) -> String {
    const SHOWN: usize = 10;
    let mut names: Vec<String> = config
        .contexts
        .iter()
        .take(SHOWN)
        .map(|c| quote(&c.name))
        .collect();
    if config.contexts.len() > SHOWN {
        names.push(format!("and {} more", config.contexts.len() - SHOWN));
    }
    if names.is_empty() {
        "no contexts".into()
    } else {
        names.join(", ")
    }
}

/// A name from the kubeconfig for a message: quoted, one line, not too long.
pub(super) fn quote(name: &str) -> String {
    const MAX: usize = 64;
    let mut s: String = name
        .chars()
        .take(MAX)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if name.chars().count() > MAX {
        s.push('…');
    }
    format!("'{s}'")
}

pub(super) fn invalid(message: impl Into<String>) -> ValidationError {
    ValidationError::new("kubeconfig", message)
}

#[cfg(test)]
mod tests {
    use base64::Engine;

    use super::*;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    fn config(user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: prod\nclusters:\n- name: c1\n  \
             cluster:\n    server: https://10.0.0.1:6443\n    certificate-authority-data: {}\n\
             users:\n- name: u1\n  user:\n{user}\ncontexts:\n- name: prod\n  context:\n    \
             cluster: c1\n    user: u1\n",
            b64(CA)
        )
    }

    #[test]
    fn accepts_a_token_user_and_keeps_one_context() {
        let p = parse_kubeconfig(&config("    token: abc.def"), None, false).expect("valid");
        assert_eq!(p.server(), "https://10.0.0.1:6443");
        assert_eq!(p.context(), "prod");
        assert_eq!(p.auth_kind(), AuthKind::Token);
        assert!(p.has_ca_data());
        let again = String::from_utf8(p.to_yaml().expose().to_vec()).expect("utf-8");
        let q = parse_kubeconfig(&again, None, false).expect("round trip");
        assert_eq!(q.server(), p.server());
        assert!(
            !format!("{p:?}").contains("abc.def"),
            "Debug hides the token"
        );
    }

    #[test]
    fn static_credentials_are_tokens_and_client_certificates_only() {
        const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHcC\n-----END EC PRIVATE KEY-----\n";
        let token = parse_kubeconfig(&config("    token: abc.def"), None, false).expect("valid");
        match token.static_credential() {
            Some(StaticCredential::Token(t)) => assert_eq!(t.expose(), b"abc.def"),
            other => panic!("a token: {other:?}"),
        }
        let user = format!(
            "    client-certificate-data: {}\n    client-key-data: {}",
            b64(CA),
            b64(KEY)
        );
        let cert = parse_kubeconfig(&config(&user), None, false).expect("valid");
        match cert.static_credential() {
            Some(StaticCredential::ClientCertificate {
                certificate_data,
                key_data,
            }) => {
                assert_eq!(certificate_data, b64(CA));
                assert_eq!(key_data.expose(), b64(KEY).as_bytes());
            }
            other => panic!("a client certificate: {other:?}"),
        }
        assert!(!format!("{:?}", cert.static_credential()).contains(&b64(KEY)));
        let exec = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      \
                    command: gcloud";
        let plugin = parse_kubeconfig(&config(exec), None, true).expect("allowed");
        assert!(plugin.static_credential().is_none());
        let basic = "    username: u\n    password: p";
        let basic = parse_kubeconfig(&config(basic), None, false).expect("valid");
        assert!(basic.static_credential().is_none());
    }

    #[test]
    fn refuses_files_and_plugins_without_quoting_secrets() {
        let err = |user: &str, exec: bool| {
            parse_kubeconfig(&config(user), None, exec)
                .expect_err("refused")
                .message
        };
        assert!(err("    tokenFile: /etc/shadow", false).contains("tokenFile"));
        assert!(err("    client-certificate: /a\n    client-key: /b", false).contains("files"));
        let exec = "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      \
                    command: aws";
        assert!(err(exec, false).contains("exec plugin"));
        let ok = parse_kubeconfig(&config(exec), None, true).expect("allowed");
        assert_eq!(ok.auth_kind(), AuthKind::Exec);
        let bad_token = "    token: \"sec\\nret\"";
        let message = err(bad_token, false);
        assert!(!message.contains("sec"), "{message}");
        assert!(err("    username: admin", false).contains("without a password"));
        assert!(err("    {}", false).contains("no credentials"));
    }

    #[test]
    fn alias_bombs_are_refused() {
        // "Billion laughs": nine levels of nine aliases would expand to 9^9 strings.
        let mut yaml = format!(
            "{}lol0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
            config("    token: t")
        );
        for i in 1..10 {
            let p = i - 1;
            yaml.push_str(&format!(
                "lol{i}: &l{i} [*l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}, *l{p}]\n"
            ));
        }
        let err = parse_kubeconfig(&yaml, None, false).expect_err("refused");
        assert_eq!(err.field, "kubeconfig");
        assert!(err.message.contains("aliases"), "{}", err.message);

        let many: String = (0..=MAX_ALIASES).map(|i| format!("x{i}: *t\n")).collect();
        let yaml = format!("{}anchor: &t 1\n{many}", config("    token: t"));
        let err = parse_kubeconfig(&yaml, None, false).expect_err("refused");
        assert!(
            err.message.contains("more than 100 YAML aliases"),
            "{}",
            err.message
        );

        // A few aliases are fine.
        let yaml = config("    token: &tok t").replace("token: t", "token: *tok");
        let yaml = format!("{yaml}extra: *tok\n");
        parse_kubeconfig(&yaml, None, false).expect("a few aliases are accepted");
    }

    #[test]
    fn deep_nesting_is_refused_without_a_panic() {
        let block: String = (0..1000)
            .map(|i| format!("{}a:\n", " ".repeat(i)))
            .collect();
        let flow = format!("a: {}{}", "[".repeat(1000), "]".repeat(1000));
        let flow_maps = format!("a: {}1{}", "{b: ".repeat(1000), "}".repeat(1000));
        for yaml in [block, flow, flow_maps] {
            let yaml = format!("{}{yaml}", config("    token: t"));
            let err = parse_kubeconfig(&yaml, None, false).expect_err("refused");
            assert_eq!(err.field, "kubeconfig");
            assert!(
                err.message.contains("nests deeper than 64 levels"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn yaml_errors_give_a_position_and_never_the_input() {
        let yaml = config("    token: \"s3cret").replace("s3cret", "s3cret\n");
        let err = parse_kubeconfig(&yaml, None, false).expect_err("refused");
        assert!(err.message.contains("near line"), "{}", err.message);
        assert!(!err.message.contains("s3cret"), "{}", err.message);
        let twice = config("    token: s3cret\n    token: s3cret");
        let err = parse_kubeconfig(&twice, None, false).expect_err("refused");
        assert!(err.message.contains("repeats a key"), "{}", err.message);
        assert!(!err.message.contains("s3cret"), "{}", err.message);
        let big = "#".repeat(MAX_KUBECONFIG_BYTES + 1);
        let err = read_kubeconfig(&big).expect_err("refused");
        assert!(err.message.contains("too large"), "{}", err.message);
    }

    #[test]
    fn long_values_are_written_on_their_key_line() {
        let ca = "LS0t".repeat(200);
        let token = "x".repeat(900);
        let mut cfg = read_kubeconfig(&config(&format!("    token: {token}"))).expect("read");
        if let Some(c) = cfg.clusters.first_mut().and_then(|c| c.cluster.as_mut()) {
            c.certificate_authority_data = Some(ca.clone());
        }
        let text = write_kubeconfig(&cfg).expect("written");
        assert!(
            text.lines()
                .any(|l| l.trim() == format!("certificate-authority-data: {ca}")),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.trim() == format!("token: {token}")),
            "{text}"
        );
        let back = read_kubeconfig(&text).expect("read back");
        let ca_back = back.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.certificate_authority_data.clone());
        assert_eq!(ca_back, Some(ca));
    }

    #[test]
    fn several_documents_are_merged_and_written_in_kubectl_order() {
        let first = config("    token: t");
        let yaml =
            format!("{first}---\nclusters:\n- name: c2\n  cluster:\n    server: https://b\n");
        let merged = read_kubeconfig(&yaml).expect("merged");
        assert_eq!(merged.clusters.len(), 2);
        let text = write_kubeconfig(&merged).expect("written");
        assert!(text.starts_with("apiVersion: v1\nkind: Config\n"), "{text}");
        let mismatch = format!("{first}---\nkind: Other\n");
        let err = read_kubeconfig(&mismatch).expect_err("refused");
        assert!(err.message.contains("do not agree"), "{}", err.message);
    }

    #[test]
    fn server_urls_are_checked() {
        for bad in [
            "ftp://x",
            "10.0.0.1:6443",
            "https://u:p@h",
            "https://h/?a=b",
            "",
        ] {
            let yaml = config("    token: t").replace("https://10.0.0.1:6443", bad);
            assert!(parse_kubeconfig(&yaml, None, false).is_err(), "{bad}");
        }
    }
}
