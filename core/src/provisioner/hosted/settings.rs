//! A hosted provider's settings: the shared etcd (endpoints, its server CA, the client CA
//! KQueen signs control planes' certificates with, KQueen's own administrator certificate),
//! the Kubernetes versions it offers (the binaries of each), and the address control planes
//! listen on.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

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

pub(super) fn provider_schema() -> ParamSchema {
    let text = || ParamKind::Text { max_len: 64 * 1024 };
    ParamSchema::new(vec![
        ParamSpec::new(
            RUNTIME,
            "Runtime",
            ParamKind::Enum {
                options: vec!["process".into()],
                default: Some("process".into()),
            },
        )
        .help(
            "process: KQueen runs each control plane's binaries on this host and supervises them",
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
            .help("one line per version: 1.33 /path/kube-apiserver /path/kube-controller-manager"),
        ParamSpec::new(
            ADDRESS,
            "Listen address",
            ParamKind::String {
                default: Some("127.0.0.1".into()),
                max_len: 64,
            },
        )
        .help("the address control planes listen on and kubeconfigs name"),
    ])
}

/// The binaries of one Kubernetes version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Binaries {
    pub(super) apiserver: PathBuf,
    pub(super) controller_manager: PathBuf,
}

/// `major.minor` → binaries, from the `versions` setting. Messages name the line.
pub(super) fn parse_versions(text: &str) -> Result<BTreeMap<(u32, u32), Binaries>, String> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let n = i + 1;
        let parts: Vec<&str> = line.split_whitespace().collect();
        let [version, apiserver, controller_manager] = parts.as_slice() else {
            return Err(format!(
                "line {n}: write the version, then the paths of kube-apiserver and kube-controller-manager"
            ));
        };
        let version = parse_minor(version)
            .ok_or_else(|| format!("line {n}: '{version}' is not like 1.33"))?;
        for path in [apiserver, controller_manager] {
            if !Path::new(path).is_absolute() {
                return Err(format!("line {n}: '{path}' is not an absolute path"));
            }
        }
        let binaries = Binaries {
            apiserver: PathBuf::from(apiserver),
            controller_manager: PathBuf::from(controller_manager),
        };
        if out.insert(version, binaries).is_some() {
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
    let versions = parse_versions(config.get(VERSIONS).map(String::as_str).unwrap_or_default())
        .map_err(|m| ValidationError::new(VERSIONS, m))?;
    for b in versions.values() {
        for path in [&b.apiserver, &b.controller_manager] {
            if !path.is_file() {
                return Err(ValidationError::new(
                    VERSIONS,
                    format!("{} is not a file on this host", path.display()),
                ));
            }
        }
    }
    address(config).map_err(|m| ValidationError::new(ADDRESS, m))?;
    Ok(())
}

pub(super) fn check_secrets(secrets: &Params) -> Result<(), ValidationError> {
    for field in [CLIENT_CA_KEY, ADMIN_KEY] {
        if let Some(pem) = secrets.get(field) {
            pki::public_key_of(pem)
                .map_err(|_| ValidationError::new(field, "must be a PEM private key"))?;
        }
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

fn secret_text<'a>(ctx: &'a OpContext, field: &str) -> Result<&'a str, ProvisionError> {
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

/// The binaries of `version` (`None`: the newest offered) and that version.
pub(super) fn binaries(
    config: &Params,
    version: Option<&str>,
) -> Result<((u32, u32), Binaries), String> {
    let versions = parse_versions(config.get(VERSIONS).map(String::as_str).unwrap_or_default())?;
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
