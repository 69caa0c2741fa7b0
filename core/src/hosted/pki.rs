//! The certificates and keys of one hosted control plane, generated in Rust (rcgen, ECDSA
//! P-256), and the client certificate its API server shows the shared etcd.
//!
//! What kube-apiserver and kube-controller-manager need, as kubeadm lays it out: the cluster
//! CA; the API server's serving certificate (SANs: the in-cluster names, the first service
//! address and every address the server is reached at) and its client certificate for
//! kubelets; the front-proxy CA and client (aggregated APIs); the service-account signing
//! key pair; client certificates for KQueen (in `system:masters`) and the controller manager.
//! Private keys are [`Secret`]s: sealed in the vault by the caller, never printed.

use std::net::IpAddr;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::vault::Secret;

/// A certificate (PEM) and its private key (PEM, secret).
#[derive(Clone)]
pub struct CertKey {
    pub cert_pem: String,
    pub key_pem: Secret,
}

impl std::fmt::Debug for CertKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertKey")
            .field("cert_pem", &format_args!("{} bytes", self.cert_pem.len()))
            .field("key_pem", &"(secret)")
            .finish()
    }
}

/// Everything a hosted control plane's processes are started with.
#[derive(Debug, Clone)]
pub struct ControlPlanePki {
    pub ca: CertKey,
    pub apiserver: CertKey,
    pub apiserver_kubelet_client: CertKey,
    pub front_proxy_ca: CertKey,
    pub front_proxy_client: CertKey,
    /// The service-account token signing key (private, PEM) and its public half.
    pub service_account_key: Secret,
    pub service_account_pub: String,
    /// KQueen's own administrator (`system:masters`): the stored admin kubeconfig uses it.
    pub admin: CertKey,
    pub controller_manager: CertKey,
    pub scheduler: CertKey,
}

/// What the certificates are made for.
#[derive(Debug, Clone)]
pub struct PkiRequest {
    /// Shown in the certificates' names (`<name> CA`).
    pub cluster_name: String,
    /// Where the API server is reached: host names and addresses (SANs).
    pub hosts: Vec<String>,
    /// The first address of the service range (the `kubernetes` Service).
    pub service_ip: IpAddr,
    /// The cluster's DNS domain (`cluster.local`).
    pub dns_domain: String,
    /// Validity of the CAs and of the leaf certificates, in days.
    pub ca_days: u32,
    pub leaf_days: u32,
}

/// How long a control plane's leaf certificates are valid, in days.
pub const LEAF_DAYS: u32 = 1825;

impl PkiRequest {
    pub fn new(cluster_name: &str, hosts: Vec<String>) -> Self {
        Self {
            cluster_name: cluster_name.to_owned(),
            hosts,
            service_ip: IpAddr::from([10, 96, 0, 1]),
            dns_domain: "cluster.local".into(),
            ca_days: 3650,
            leaf_days: LEAF_DAYS,
        }
    }
}

/// Why certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("invalid certificate input: {0}")]
    Invalid(String),
    #[error("cannot generate a certificate: {0}")]
    Generate(#[from] rcgen::Error),
}

/// A CA that can sign: its certificate and key.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    pair: CertKey,
}

impl Authority {
    /// A new self-signed CA named `common_name`, valid `days` days from yesterday.
    pub fn generate(common_name: &str, days: u32) -> Result<Self, PkiError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        validity(&mut params, days);
        let cert = params.self_signed(&key)?;
        let pair = CertKey {
            cert_pem: cert.pem(),
            key_pem: Secret::new(key.serialize_pem().into_bytes()),
        };
        Ok(Self {
            issuer: Issuer::new(params, key),
            pair,
        })
    }

    /// An existing CA (the shared etcd's client CA, from the provider's settings).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, PkiError> {
        let key = KeyPair::from_pem(key_pem)
            .map_err(|_| PkiError::Invalid("the CA key is not a PEM private key".into()))?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)
            .map_err(|_| PkiError::Invalid("the CA certificate is not a PEM certificate".into()))?;
        let key_pem = Secret::new(key_pem.as_bytes().to_vec());
        Ok(Self {
            issuer,
            pair: CertKey {
                cert_pem: cert_pem.to_owned(),
                key_pem,
            },
        })
    }

    pub fn cert_key(&self) -> &CertKey {
        &self.pair
    }

    /// A client certificate: `common_name` is the user, `organization` the group.
    pub fn client(
        &self,
        common_name: &str,
        organization: Option<&str>,
        days: u32,
    ) -> Result<CertKey, PkiError> {
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        if let Some(org) = organization {
            params
                .distinguished_name
                .push(DnType::OrganizationName, org);
        }
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.leaf(params, days)
    }

    /// A serving certificate for `names` (host names or addresses).
    pub fn server(
        &self,
        common_name: &str,
        names: &[String],
        days: u32,
    ) -> Result<CertKey, PkiError> {
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.subject_alt_names = names.iter().map(|n| san(n)).collect::<Result<_, _>>()?;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.leaf(params, days)
    }

    fn leaf(&self, mut params: CertificateParams, days: u32) -> Result<CertKey, PkiError> {
        validity(&mut params, days);
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertKey {
            cert_pem: cert.pem(),
            key_pem: Secret::new(key.serialize_pem().into_bytes()),
        })
    }
}

/// The whole PKI of a new hosted control plane.
pub fn generate(req: &PkiRequest) -> Result<ControlPlanePki, PkiError> {
    if req.hosts.is_empty() {
        return Err(PkiError::Invalid(
            "the API server needs at least one address".into(),
        ));
    }
    let ca = Authority::generate(&format!("{} CA", req.cluster_name), req.ca_days)?;
    let front_proxy_ca =
        Authority::generate(&format!("{} front-proxy CA", req.cluster_name), req.ca_days)?;
    let mut names: Vec<String> = [
        "kubernetes".to_owned(),
        "kubernetes.default".to_owned(),
        "kubernetes.default.svc".to_owned(),
        format!("kubernetes.default.svc.{}", req.dns_domain),
        req.service_ip.to_string(),
    ]
    .into_iter()
    .chain(req.hosts.iter().cloned())
    .collect();
    names.dedup();
    let days = req.leaf_days;
    let service_account = KeyPair::generate()?;
    Ok(ControlPlanePki {
        apiserver: ca.server("kube-apiserver", &names, days)?,
        apiserver_kubelet_client: ca.client(
            "kube-apiserver-kubelet-client",
            Some("system:masters"),
            days,
        )?,
        front_proxy_client: front_proxy_ca.client("front-proxy-client", None, days)?,
        admin: ca.client("kqueen-admin", Some("system:masters"), days)?,
        controller_manager: ca.client("system:kube-controller-manager", None, days)?,
        scheduler: ca.client("system:kube-scheduler", None, days)?,
        service_account_pub: service_account.public_key_pem(),
        service_account_key: Secret::new(service_account.serialize_pem().into_bytes()),
        ca: ca.pair,
        front_proxy_ca: front_proxy_ca.pair,
    })
}

fn san(name: &str) -> Result<SanType, PkiError> {
    match name.parse::<IpAddr>() {
        Ok(ip) => Ok(SanType::IpAddress(ip)),
        Err(_) => {
            let host = name.strip_prefix("*.").unwrap_or(name);
            let valid = !host.is_empty()
                && host.len() <= 253
                && host.split('.').all(|label| {
                    (1..=63).contains(&label.len())
                        && label
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                });
            let invalid = || PkiError::Invalid(format!("'{name}' is not a host name or address"));
            if !valid {
                return Err(invalid());
            }
            name.to_owned()
                .try_into()
                .map(SanType::DnsName)
                .map_err(|_| invalid())
        }
    }
}

/// Valid from yesterday (clocks drift) for `days` days.
fn validity(params: &mut CertificateParams, days: u32) {
    let day = rcgen::date_time_ymd(1970, 1, 1);
    let now = crate::clock::now().timestamp();
    let start = day + std::time::Duration::from_secs(u64::try_from(now).unwrap_or(0))
        - std::time::Duration::from_secs(86_400);
    params.not_before = start;
    params.not_after = start + std::time::Duration::from_secs(86_400 * (u64::from(days) + 1));
}

/// A kubeconfig for `user` authenticating with a client certificate.
pub fn kubeconfig(cluster: &str, endpoint: &str, ca_pem: &str, user: &CertKey) -> Secret {
    use base64::Engine;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let admin = format!("{cluster}-admin");
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {
            "server": endpoint,
            "certificate-authority-data": b64(ca_pem.as_bytes()),
        }}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": admin}}],
        "current-context": cluster,
        "users": [{"name": admin, "user": {
            "client-certificate-data": b64(user.cert_pem.as_bytes()),
            "client-key-data": b64(user.key_pem.expose()),
        }}],
    });
    // JSON is YAML; kubectl and every client library read it as it is.
    Secret::new(config.to_string().into_bytes())
}

/// The public half (PEM) of a private key (PEM).
pub fn public_key_of(private_pem: &str) -> Result<String, PkiError> {
    KeyPair::from_pem(private_pem)
        .map(|k| k.public_key_pem())
        .map_err(|_| PkiError::Invalid("not a PEM private key".into()))
}

/// The PKI as one secret (PEMs in JSON), for the vault.
#[derive(serde::Serialize, serde::Deserialize)]
struct Bundle {
    pairs: std::collections::BTreeMap<String, (String, String)>,
    service_account_key: String,
    service_account_pub: String,
}

const PAIRS: [&str; 8] = [
    "ca",
    "apiserver",
    "apiserver-kubelet-client",
    "front-proxy-ca",
    "front-proxy-client",
    "admin",
    "controller-manager",
    "scheduler",
];

impl ControlPlanePki {
    fn pairs(&self) -> [&CertKey; 8] {
        [
            &self.ca,
            &self.apiserver,
            &self.apiserver_kubelet_client,
            &self.front_proxy_ca,
            &self.front_proxy_client,
            &self.admin,
            &self.controller_manager,
            &self.scheduler,
        ]
    }

    /// Everything as one secret, to seal in the vault.
    pub fn to_secret(&self) -> Secret {
        let text = |s: &Secret| String::from_utf8_lossy(s.expose()).into_owned();
        let bundle = Bundle {
            pairs: PAIRS
                .iter()
                .zip(self.pairs())
                .map(|(n, p)| ((*n).to_owned(), (p.cert_pem.clone(), text(&p.key_pem))))
                .collect(),
            service_account_key: text(&self.service_account_key),
            service_account_pub: self.service_account_pub.clone(),
        };
        Secret::new(serde_json::to_vec(&bundle).unwrap_or_default())
    }

    /// The PKI from [`ControlPlanePki::to_secret`]. A PKI stored before control planes ran
    /// kube-scheduler gets the scheduler's client certificate signed by its CA here.
    pub fn from_secret(secret: &Secret) -> Result<Self, PkiError> {
        let bundle: Bundle = serde_json::from_slice(secret.expose())
            .map_err(|_| PkiError::Invalid("the stored PKI is unreadable".into()))?;
        let pair = |name: &str| -> Result<CertKey, PkiError> {
            let (cert, key) = bundle
                .pairs
                .get(name)
                .ok_or_else(|| PkiError::Invalid(format!("the stored PKI lacks {name}")))?;
            Ok(CertKey {
                cert_pem: cert.clone(),
                key_pem: Secret::new(key.clone().into_bytes()),
            })
        };
        let ca = pair("ca")?;
        let scheduler = match pair("scheduler") {
            Ok(p) => p,
            Err(_) => {
                let key = String::from_utf8_lossy(ca.key_pem.expose()).into_owned();
                Authority::from_pem(&ca.cert_pem, &key)?.client(
                    "system:kube-scheduler",
                    None,
                    LEAF_DAYS,
                )?
            }
        };
        Ok(Self {
            ca,
            apiserver: pair("apiserver")?,
            apiserver_kubelet_client: pair("apiserver-kubelet-client")?,
            front_proxy_ca: pair("front-proxy-ca")?,
            front_proxy_client: pair("front-proxy-client")?,
            admin: pair("admin")?,
            controller_manager: pair("controller-manager")?,
            scheduler,
            service_account_key: Secret::new(bundle.service_account_key.clone().into_bytes()),
            service_account_pub: bundle.service_account_pub.clone(),
        })
    }
}
