//! A hosted provider's settings: the runtime, the shared etcd (endpoints, its server CA, the
//! client CA KQueen signs control planes' certificates with, KQueen's own administrator
//! certificate), the Kubernetes versions it offers (the binaries or images of each), the
//! address control planes are reached at, and for the `kubernetes` runtime the admin cluster
//! and how its Services expose the API servers.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;

use crate::hosted::etcd::EtcdAccess;
use crate::hosted::pki::{self, Authority, CertKey};
use crate::provisioner::{OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProvisionError};
use crate::vault::Secret;
use crate::ValidationError;

pub(super) const RUNTIME: &str = "runtime";
pub(super) const ENDPOINTS: &str = "etcd_endpoints";
pub(super) const ETCD_CA: &str = "etcd_ca";
pub(super) const CLIENT_CA: &str = "etcd_client_ca";
pub(super) const CLIENT_CA_KEY: &str = "etcd_client_ca_key";
pub(super) const ADMIN_CERT: &str = "etcd_admin_cert";
pub(super) const ADMIN_KEY: &str = "etcd_admin_key";
pub(super) const VERSIONS: &str = "versions";
pub(super) const ADDRESS: &str = "address";
pub(super) const ADMIN_KUBECONFIG: &str = "admin_kubeconfig";
pub(super) const SERVICE_TYPE: &str = "service_type";
pub(super) const REPLICAS: &str = "replicas";

/// Where control planes run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Runtime {
    /// The binaries, as processes of this host, supervised by KQueen.
    Process,
    /// A Deployment per control plane in an admin cluster (the Kamaji design).
    Kubernetes,
}

pub(super) fn runtime(config: &Params) -> Result<Runtime, String> {
    runtime_named(config.get(RUNTIME).map(|r| r.trim()).unwrap_or_default())
}

pub(super) fn runtime_named(name: &str) -> Result<Runtime, String> {
    match name {
        "" | "process" => Ok(Runtime::Process),
        "kubernetes" => Ok(Runtime::Kubernetes),
        other => Err(format!("'{other}' is not a runtime (process, kubernetes)")),
    }
}

impl Runtime {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::Kubernetes => "kubernetes",
        }
    }
}

/// How the admin cluster exposes a control plane's API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ServiceType {
    /// On a port of every node: kubeconfigs name `address` and that port.
    NodePort,
    /// Through the admin cluster's load balancer: kubeconfigs name its address.
    LoadBalancer,
}

impl ServiceType {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Self::NodePort => "NodePort",
            Self::LoadBalancer => "LoadBalancer",
        }
    }
}

pub(super) fn service_type(config: &Params) -> Result<ServiceType, String> {
    match config
        .get(SERVICE_TYPE)
        .map(|r| r.trim())
        .unwrap_or_default()
    {
        "" | "LoadBalancer" => Ok(ServiceType::LoadBalancer),
        "NodePort" => Ok(ServiceType::NodePort),
        other => Err(format!(
            "'{other}' is not a Service type (LoadBalancer, NodePort)"
        )),
    }
}

/// How many API server replicas a control plane has (`kubernetes` runtime).
pub(super) fn replicas(config: &Params) -> Result<i32, String> {
    match config
        .get(REPLICAS)
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
    {
        None => Ok(2),
        Some(text) => text
            .parse::<i32>()
            .ok()
            .filter(|n| (1..=5).contains(n))
            .ok_or_else(|| format!("'{text}' is not a number from 1 to 5")),
    }
}

pub(super) fn provider_schema() -> ParamSchema {
    let text = || ParamKind::Text { max_len: 64 * 1024 };
    ParamSchema::new(vec![
        ParamSpec::new(
            RUNTIME,
            "Runtime",
            ParamKind::Enum {
                options: vec!["process".into(), "kubernetes".into()],
                default: Some("process".into()),
            },
        )
        .help(
            "process: KQueen runs each control plane's binaries on this host and supervises \
             them; kubernetes: a Deployment per control plane in the admin cluster",
        ),
        ParamSpec::new(
            ENDPOINTS,
            "etcd endpoints",
            ParamKind::String {
                default: None,
                max_len: 1000,
            },
        )
        .required()
        .help("https:// URLs of the shared etcd, comma-separated"),
        ParamSpec::new(ETCD_CA, "etcd server CA (PEM)", text()).required(),
        ParamSpec::new(CLIENT_CA, "etcd client CA certificate (PEM)", text())
            .required()
            .help("the CA etcd trusts client certificates from (--trusted-ca-file)"),
        ParamSpec::new(CLIENT_CA_KEY, "etcd client CA key (PEM)", text())
            .required()
            .secret()
            .help("KQueen signs each control plane's etcd certificate with it"),
        ParamSpec::new(ADMIN_CERT, "KQueen's etcd certificate (PEM)", text())
            .required()
            .help("a client certificate of an etcd user with the root role"),
        ParamSpec::new(ADMIN_KEY, "KQueen's etcd key (PEM)", text())
            .required()
            .secret(),
        ParamSpec::new(VERSIONS, "Kubernetes versions", text())
            .required()
            .help(
                "one line per version. process: 1.33 /path/kube-apiserver \
                 /path/kube-controller-manager [/path/kube-scheduler]; kubernetes: 1.33 \
                 <registry>/kube-apiserver:v1.33.2 <registry>/kube-controller-manager:v1.33.2 \
                 [<registry>/kube-scheduler:v1.33.2]. Without the scheduler's, kube-scheduler \
                 beside the controller manager",
            ),
        ParamSpec::new(
            ADDRESS,
            "Address",
            ParamKind::String {
                default: Some("127.0.0.1".into()),
                max_len: 64,
            },
        )
        .help(
            "process: the address control planes listen on and kubeconfigs name; kubernetes \
             with NodePort: a node address kubeconfigs name",
        ),
        ParamSpec::new(ADMIN_KUBECONFIG, "Admin cluster kubeconfig", text())
            .secret()
            .help(
                "kubernetes runtime: the cluster control planes run in (a cluster administrator)",
            ),
        ParamSpec::new(
            SERVICE_TYPE,
            "Service type",
            ParamKind::Enum {
                options: vec!["LoadBalancer".into(), "NodePort".into()],
                default: Some("LoadBalancer".into()),
            },
        )
        .help("kubernetes runtime: how the admin cluster exposes each API server"),
        ParamSpec::new(
            REPLICAS,
            "API server replicas",
            ParamKind::Integer {
                default: Some(2),
                min: Some(1),
                max: Some(5),
            },
        )
        .help("kubernetes runtime: pods per control plane"),
    ])
}

/// What runs one Kubernetes version: the paths of the binaries (runtime `process`) or the
/// container images (runtime `kubernetes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Artifacts {
    pub(super) apiserver: String,
    pub(super) controller_manager: String,
    pub(super) scheduler: String,
}

/// kube-scheduler where a `versions` line names only the API server and the controller
/// manager (as lines written before KQueen ran a scheduler do): the file `kube-scheduler`
/// beside the controller manager, or its image with `kube-controller-manager` in the
/// repository's last segment replaced (how the upstream images are named).
fn scheduler_beside(controller_manager: &str, runtime: Runtime) -> Option<String> {
    match runtime {
        Runtime::Process => Path::new(controller_manager)
            .parent()
            .map(|dir| dir.join("kube-scheduler").display().to_string()),
        Runtime::Kubernetes => {
            let (repo, rest) = match controller_manager.find(['@', ':']) {
                // A `:` before the last `/` is a registry's port, not a tag.
                Some(i) if !controller_manager[i..].contains('/') => controller_manager.split_at(i),
                _ => (controller_manager, ""),
            };
            let (path, last) = repo.rsplit_once('/').unwrap_or(("", repo));
            last.contains("kube-controller-manager").then(|| {
                let last = last.replace("kube-controller-manager", "kube-scheduler");
                if path.is_empty() {
                    format!("{last}{rest}")
                } else {
                    format!("{path}/{last}{rest}")
                }
            })
        }
    }
}

/// `major.minor` → artifacts, from the `versions` setting. Messages name the line.
pub(super) fn parse_versions(
    text: &str,
    runtime: Runtime,
) -> Result<BTreeMap<(u32, u32), Artifacts>, String> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = i + 1;
        let parts: Vec<&str> = line.split_whitespace().collect();
        let what = match runtime {
            Runtime::Process => "paths",
            Runtime::Kubernetes => "images",
        };
        let (version, apiserver, controller_manager, scheduler) = match parts.as_slice() {
            [v, a, c] => (*v, *a, *c, None),
            [v, a, c, s] => (*v, *a, *c, Some(*s)),
            _ => {
                return Err(format!(
                    "line {n}: write the version, then the {what} of kube-apiserver, \
                     kube-controller-manager and kube-scheduler"
                ))
            }
        };
        let version = parse_minor(version)
            .ok_or_else(|| format!("line {n}: '{version}' is not like 1.33"))?;
        let check = |item: &str| match runtime {
            Runtime::Process if !Path::new(item).is_absolute() => {
                Err(format!("line {n}: '{item}' is not an absolute path"))
            }
            Runtime::Kubernetes if !is_image(item) => Err(format!(
                "line {n}: '{item}' is not a container image like <registry>/kube-apiserver:v1.33.2"
            )),
            _ => Ok(()),
        };
        check(apiserver)?;
        check(controller_manager)?;
        let scheduler = match scheduler {
            Some(s) => s.to_owned(),
            None => scheduler_beside(controller_manager, runtime).ok_or_else(|| {
                format!("line {n}: add the image of kube-scheduler after the controller manager's")
            })?,
        };
        check(&scheduler)?;
        let artifacts = Artifacts {
            apiserver: apiserver.to_owned(),
            controller_manager: controller_manager.to_owned(),
            scheduler,
        };
        if out.insert(version, artifacts).is_some() {
            return Err(format!(
                "line {n}: {}.{} is listed twice",
                version.0, version.1
            ));
        }
    }
    if out.is_empty() {
        return Err("list at least one version".into());
    }
    Ok(out)
}

/// Whether `text` looks like a container image reference (`name[:tag][@digest]`, no
/// scheme): what a kubelet would try to pull rather than refuse.
fn is_image(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 512
        && !text.contains("://")
        && !text.starts_with(['-', '/', ':', '@'])
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/:@".contains(c))
}

/// `1.33` or `v1.33.2` → (1, 33).
pub(crate) fn parse_minor(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.trim().trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

pub(super) fn check_provider(config: &Params) -> Result<(), ValidationError> {
    let endpoints = endpoints(config).map_err(|m| ValidationError::new(ENDPOINTS, m))?;
    if endpoints.is_empty() {
        return Err(ValidationError::new(ENDPOINTS, "is required"));
    }
    for field in [ETCD_CA, CLIENT_CA, ADMIN_CERT] {
        let pem = config.get(field).map(String::as_str).unwrap_or_default();
        if !pem.contains("-----BEGIN CERTIFICATE-----") {
            return Err(ValidationError::new(field, "must be a PEM certificate"));
        }
    }
    let runtime = runtime(config).map_err(|m| ValidationError::new(RUNTIME, m))?;
    let versions = parse_versions(versions_text(config), runtime)
        .map_err(|m| ValidationError::new(VERSIONS, m))?;
    if runtime == Runtime::Process {
        for b in versions.values() {
            for path in [&b.apiserver, &b.controller_manager, &b.scheduler] {
                if !Path::new(path).is_file() {
                    return Err(ValidationError::new(
                        VERSIONS,
                        format!("{path} is not a file on this host"),
                    ));
                }
            }
        }
    }
    address(config).map_err(|m| ValidationError::new(ADDRESS, m))?;
    service_type(config).map_err(|m| ValidationError::new(SERVICE_TYPE, m))?;
    replicas(config).map_err(|m| ValidationError::new(REPLICAS, m))?;
    Ok(())
}

fn versions_text(config: &Params) -> &str {
    config.get(VERSIONS).map(String::as_str).unwrap_or_default()
}

pub(super) fn check_secrets(secrets: &Params) -> Result<(), ValidationError> {
    for field in [CLIENT_CA_KEY, ADMIN_KEY] {
        if let Some(pem) = secrets.get(field) {
            pki::public_key_of(pem)
                .map_err(|_| ValidationError::new(field, "must be a PEM private key"))?;
        }
    }
    if let Some(text) = secrets
        .get(ADMIN_KUBECONFIG)
        .filter(|t| !t.trim().is_empty())
    {
        crate::kubernetes::parse_kubeconfig(text, None, false)
            .map_err(|e| ValidationError::new(ADMIN_KUBECONFIG, e.message))?;
    }
    Ok(())
}

fn endpoints(config: &Params) -> Result<Vec<String>, String> {
    let list: Vec<String> = config
        .get(ENDPOINTS)
        .map(String::as_str)
        .unwrap_or_default()
        .split(',')
        .map(|e| e.trim().trim_end_matches('/').to_owned())
        .filter(|e| !e.is_empty())
        .collect();
    for e in &list {
        if !e.starts_with("https://") {
            return Err(format!(
                "'{e}' must start with https:// (etcd runs with TLS)"
            ));
        }
    }
    Ok(list)
}

pub(super) fn address(config: &Params) -> Result<IpAddr, String> {
    let text = config
        .get(ADDRESS)
        .map(|a| a.trim())
        .filter(|a| !a.is_empty())
        .unwrap_or("127.0.0.1");
    text.parse()
        .map_err(|_| format!("'{text}' is not an IP address"))
}

pub(super) fn secret_text<'a>(ctx: &'a OpContext, field: &str) -> Result<&'a str, ProvisionError> {
    std::str::from_utf8(ctx.secret(field)?.expose())
        .map_err(|_| ProvisionError::Failed(format!("provider secret '{field}' is not text")))
}

/// How KQueen reaches the shared etcd as its administrator.
pub(super) fn etcd_access(ctx: &OpContext) -> Result<EtcdAccess, ProvisionError> {
    Ok(EtcdAccess {
        endpoints: endpoints(&ctx.provider_config).map_err(ProvisionError::Failed)?,
        server_ca_pem: ctx.setting(ETCD_CA)?.to_owned(),
        client: CertKey {
            cert_pem: ctx.setting(ADMIN_CERT)?.to_owned(),
            key_pem: Secret::new(secret_text(ctx, ADMIN_KEY)?.as_bytes().to_vec()),
        },
    })
}

/// The CA KQueen signs control planes' etcd certificates with.
pub(super) fn client_ca(ctx: &OpContext) -> Result<Authority, ProvisionError> {
    Authority::from_pem(ctx.setting(CLIENT_CA)?, secret_text(ctx, CLIENT_CA_KEY)?)
        .map_err(|e| ProvisionError::Failed(e.to_string()))
}

/// The artifacts of `version` (`None`: the newest offered) and that version.
pub(super) fn artifacts(
    config: &Params,
    version: Option<&str>,
) -> Result<((u32, u32), Artifacts), String> {
    let versions = parse_versions(versions_text(config), runtime(config)?)?;
    let wanted = match version.map(str::trim).filter(|v| !v.is_empty()) {
        Some(v) => Some(parse_minor(v).ok_or_else(|| format!("'{v}' is not like 1.33"))?),
        None => None,
    };
    let found = match wanted {
        Some(w) => versions.get_key_value(&w),
        None => versions.iter().next_back(),
    };
    found.map(|(v, b)| (*v, b.clone())).ok_or_else(|| {
        let offered: Vec<String> = versions.keys().map(|(a, b)| format!("{a}.{b}")).collect();
        format!(
            "Kubernetes {} is not offered here (offered: {})",
            version.unwrap_or_default(),
            offered.join(", ")
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_name_paths_for_processes_and_images_for_kubernetes() {
        let paths = "1.20 /opt/k/kube-apiserver /opt/k/kube-controller-manager\n";
        let images = "# comment\n1.33 reg.test/kube-apiserver:v1.33.2 reg.test/kube-controller-manager@sha256:ab12\n";
        assert_eq!(
            parse_versions(paths, Runtime::Process).unwrap()[&(1, 20)].apiserver,
            "/opt/k/kube-apiserver"
        );
        let parsed = parse_versions(images, Runtime::Kubernetes).unwrap();
        assert_eq!(
            parsed[&(1, 33)].controller_manager,
            "reg.test/kube-controller-manager@sha256:ab12"
        );
        let e = parse_versions(images, Runtime::Process).unwrap_err();
        assert!(e.contains("line 2") && e.contains("absolute path"), "{e}");
        for bad in [
            "1.33 https://reg.test/a:v1 reg.test/b:v1",
            "1.33 -a b",
            "1.33 reg.test/a:v1 reg.test/b$:v1",
        ] {
            let e = parse_versions(bad, Runtime::Kubernetes).unwrap_err();
            assert!(e.contains("not a container image"), "{bad}: {e}");
        }
        let e = parse_versions("1.33 reg.test/a:v1", Runtime::Kubernetes).unwrap_err();
        assert!(e.contains("images of kube-apiserver"), "{e}");
    }

    #[test]
    fn the_scheduler_is_named_or_found_beside_the_controller_manager() {
        let parsed = parse_versions(
            "1.20 /opt/k/kube-apiserver /opt/k/kube-controller-manager",
            Runtime::Process,
        )
        .unwrap();
        assert_eq!(parsed[&(1, 20)].scheduler, "/opt/k/kube-scheduler");
        let parsed =
            parse_versions("1.20 /a/apiserver /b/cm /c/scheduler", Runtime::Process).unwrap();
        assert_eq!(parsed[&(1, 20)].scheduler, "/c/scheduler");
        for (cm, scheduler) in [
            (
                "registry.k8s.io/kube-controller-manager:v1.33.2",
                "registry.k8s.io/kube-scheduler:v1.33.2",
            ),
            (
                "reg.test:5000/k8s/kube-controller-manager@sha256:ab12",
                "reg.test:5000/k8s/kube-scheduler@sha256:ab12",
            ),
            ("kube-controller-manager", "kube-scheduler"),
        ] {
            let line = format!("1.33 reg.test/kube-apiserver:v1 {cm}");
            let parsed = parse_versions(&line, Runtime::Kubernetes).unwrap();
            assert_eq!(parsed[&(1, 33)].scheduler, scheduler, "{cm}");
        }
        let e =
            parse_versions("1.33 reg.test/a:v1 reg.test/b:v1", Runtime::Kubernetes).unwrap_err();
        assert!(e.contains("add the image of kube-scheduler"), "{e}");
        let parsed = parse_versions(
            "1.33 reg.test/a:v1 reg.test/b:v1 reg.test/c:v1",
            Runtime::Kubernetes,
        )
        .unwrap();
        assert_eq!(parsed[&(1, 33)].scheduler, "reg.test/c:v1");
        let e = parse_versions("1.33 /a /b /c /d", Runtime::Process).unwrap_err();
        assert!(e.contains("kube-scheduler"), "{e}");
    }

    #[test]
    fn the_runtime_service_type_and_replicas_are_checked() {
        let config = |pairs: &[(&str, &str)]| -> Params {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(runtime(&config(&[])), Ok(Runtime::Process));
        assert_eq!(
            runtime(&config(&[(RUNTIME, "kubernetes")])),
            Ok(Runtime::Kubernetes)
        );
        assert!(runtime(&config(&[(RUNTIME, "vm")])).is_err());
        assert_eq!(service_type(&config(&[])), Ok(ServiceType::LoadBalancer));
        assert_eq!(
            service_type(&config(&[(SERVICE_TYPE, "NodePort")])),
            Ok(ServiceType::NodePort)
        );
        assert!(service_type(&config(&[(SERVICE_TYPE, "ClusterIP")])).is_err());
        assert_eq!(replicas(&config(&[])), Ok(2));
        assert_eq!(replicas(&config(&[(REPLICAS, "3")])), Ok(3));
        for bad in ["0", "6", "two"] {
            assert!(replicas(&config(&[(REPLICAS, bad)])).is_err(), "{bad}");
        }
        // A kubernetes provider's images need not exist on this host; a process one's do.
        let mut kubernetes = config(&[
            (RUNTIME, "kubernetes"),
            (ENDPOINTS, "https://etcd.test:2379"),
            (ETCD_CA, "-----BEGIN CERTIFICATE-----"),
            (CLIENT_CA, "-----BEGIN CERTIFICATE-----"),
            (ADMIN_CERT, "-----BEGIN CERTIFICATE-----"),
            (
                VERSIONS,
                "1.33 reg.test/a:v1.33.2 reg.test/b:v1.33.2 reg.test/c:v1.33.2",
            ),
        ]);
        check_provider(&kubernetes).unwrap();
        kubernetes.insert(RUNTIME.into(), "process".into());
        let e = check_provider(&kubernetes).unwrap_err();
        assert_eq!(e.field, VERSIONS);
    }
}
