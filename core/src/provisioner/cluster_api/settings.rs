//! A Cluster API provider's settings and a cluster request's parameters: the management
//! cluster (its kubeconfig, a secret), where clusters go (one namespace, or one per tenant),
//! the ClusterClass, and which ClusterClass variables carry the region and the machine flavor.

use crate::provisioner::{OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProvisionError};
use crate::ValidationError;

pub(super) const MANAGEMENT_KUBECONFIG: &str = "management_kubeconfig";
pub(super) const NAMESPACE: &str = "namespace";
pub(super) const NAMESPACE_PER_TENANT: &str = "namespace_per_tenant";
pub(super) const CLUSTER_CLASS: &str = "cluster_class";
pub(super) const CLASS_NAMESPACE: &str = "class_namespace";
pub(super) const REGION_VARIABLE: &str = "region_variable";
pub(super) const FLAVOR_VARIABLE: &str = "flavor_variable";
pub(super) const WORKER_POOLS: &str = "worker_pools";
pub(super) const POD_CIDR: &str = "pod_cidr";
pub(super) const SERVICE_CIDR: &str = "service_cidr";

/// Cluster parameters.
pub(super) const VERSION: &str = "kubernetes_version";
pub(super) const CONTROL_PLANE: &str = "control_plane_replicas";
pub(super) const NODES: &str = "node_count";
pub(super) const WORKER_CLASS: &str = "worker_class";
pub(super) const FLAVOR: &str = "machine_flavor";
pub(super) const REGION: &str = "region";
pub(super) const EXTRA_WORKERS: &str = "extra_workers";
pub(super) const VARIABLES: &str = "variables";

const DEFAULT_NAMESPACE: &str = "default";

pub(super) fn provider_schema() -> ParamSchema {
    let name = |default: Option<&str>| ParamKind::String {
        default: default.map(str::to_owned),
        max_len: 63,
    };
    ParamSchema::new(vec![
        ParamSpec::new(
            MANAGEMENT_KUBECONFIG,
            "Management cluster kubeconfig",
            ParamKind::Text { max_len: 64 * 1024 },
        )
        .required()
        .secret()
        .help(
            "A kubeconfig of the Cluster API management cluster (clusterctl init was run \
             there), allowed to manage Cluster objects and read their kubeconfig Secrets.",
        ),
        ParamSpec::new(NAMESPACE, "Namespace", name(Some(DEFAULT_NAMESPACE))).help(
            "Where this provider's Cluster objects live; with one namespace per tenant, the \
             prefix of those namespaces (<namespace>-<tenant>).",
        ),
        ParamSpec::new(
            NAMESPACE_PER_TENANT,
            "One namespace per tenant",
            ParamKind::Boolean { default: false },
        ),
        ParamSpec::new(CLUSTER_CLASS, "ClusterClass", name(None))
            .required()
            .help("The ClusterClass every cluster of this provider is built from."),
        ParamSpec::new(CLASS_NAMESPACE, "ClusterClass namespace", name(None)).help(
            "Where the ClusterClass lives when not beside the clusters (Cluster API 1.8 or \
             newer); empty: the clusters' namespace.",
        ),
        ParamSpec::new(REGION_VARIABLE, "Region variable", name(None)).help(
            "The ClusterClass variable that takes the region (e.g. region, location); \
             empty: requests cannot choose one.",
        ),
        ParamSpec::new(FLAVOR_VARIABLE, "Machine flavor variable", name(None)).help(
            "The ClusterClass variable that takes a worker pool's machine flavor (e.g. \
             workerMachineType, vmSize, flavor); set per worker pool; empty: requests \
             cannot choose one.",
        ),
        ParamSpec::new(
            WORKER_POOLS,
            "Worker pools are",
            ParamKind::Enum {
                options: vec!["machine-deployments".into(), "machine-pools".into()],
                default: Some("machine-deployments".into()),
            },
        )
        .help(
            "What the ClusterClass's worker classes are: MachineDeployments (most), or \
             MachinePools (the AKS and GKE classes).",
        ),
        ParamSpec::new(POD_CIDR, "Pod network", name(None)).help(
            "The clusters' pod CIDR (spec.clusterNetwork), e.g. 192.168.0.0/16; empty: the \
             ClusterClass's default.",
        ),
        ParamSpec::new(SERVICE_CIDR, "Service network", name(None))
            .help("The clusters' service CIDR, e.g. 10.128.0.0/12; empty: the default."),
    ])
}

pub(super) fn cluster_schema() -> ParamSchema {
    ParamSchema::new(vec![
        ParamSpec::new(
            VERSION,
            "Kubernetes version",
            ParamKind::String {
                default: None,
                max_len: 40,
            },
        )
        .required()
        .help("e.g. v1.31.2; the ClusterClass must support it"),
        ParamSpec::new(
            CONTROL_PLANE,
            "Control plane machines",
            ParamKind::Integer {
                default: Some(1),
                min: Some(0),
                max: Some(7),
            },
        )
        .help("an odd number: 1, 3, 5 or 7; 0 for a managed control plane (EKS, AKS, GKE)"),
        ParamSpec::new(
            NODES,
            "Workers",
            ParamKind::Integer {
                default: Some(1),
                min: Some(0),
                max: Some(200),
            },
        )
        .help("machines of the first worker pool (what a scale changes)"),
        ParamSpec::new(
            WORKER_CLASS,
            "Worker class",
            ParamKind::String {
                default: Some("default-worker".into()),
                max_len: 63,
            },
        )
        .help("the ClusterClass's worker class of the first pool"),
        ParamSpec::new(
            FLAVOR,
            "Machine flavor",
            ParamKind::String {
                default: None,
                max_len: 100,
            },
        )
        .help("of the first worker pool, e.g. m6i.large, Standard_D4s_v5, n2-standard-4"),
        ParamSpec::new(
            REGION,
            "Region",
            ParamKind::String {
                default: None,
                max_len: 100,
            },
        ),
        ParamSpec::new(
            EXTRA_WORKERS,
            "More worker pools",
            ParamKind::Text { max_len: 4096 },
        )
        .help("one per line: <worker class> <machines> [<machine flavor>]"),
        ParamSpec::new(
            VARIABLES,
            "ClusterClass variables",
            ParamKind::Text { max_len: 16 * 1024 },
        )
        .help(r#"a JSON object of more variables, e.g. {"sshKeyName": "ops"}; templates usually fix it"#),
    ])
}

/// A provider setting, trimmed; None when empty.
pub(super) fn setting<'a>(config: &'a Params, name: &str) -> Option<&'a str> {
    config.get(name).map(|s| s.trim()).filter(|s| !s.is_empty())
}

/// Whether a name is a DNS-1123 label (what namespaces and object names here must be).
pub(super) fn is_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

pub(super) fn check_provider(config: &Params) -> Result<(), ValidationError> {
    for field in [NAMESPACE, CLUSTER_CLASS, CLASS_NAMESPACE] {
        if let Some(v) = setting(config, field) {
            if !is_label(v) {
                return Err(ValidationError::new(
                    field,
                    "must be a Kubernetes name: lowercase letters, digits and '-', at most 63",
                ));
            }
        }
    }
    if setting(config, CLUSTER_CLASS).is_none() {
        return Err(ValidationError::new(CLUSTER_CLASS, "is required"));
    }
    if per_tenant(config) && setting(config, NAMESPACE).is_some_and(|p| p.len() > 22) {
        return Err(ValidationError::new(
            NAMESPACE,
            "with one namespace per tenant, the prefix may have at most 22 characters",
        ));
    }
    for field in [POD_CIDR, SERVICE_CIDR] {
        if let Some(v) = setting(config, field) {
            if !is_cidr(v) {
                return Err(ValidationError::new(
                    field,
                    "must be a CIDR block, like 192.168.0.0/16 or fd00::/108",
                ));
            }
        }
    }
    for field in [REGION_VARIABLE, FLAVOR_VARIABLE] {
        if let Some(v) = setting(config, field) {
            if !v
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            {
                return Err(ValidationError::new(
                    field,
                    "must be a ClusterClass variable name (letters, digits, '_', '-', '.')",
                ));
            }
        }
    }
    Ok(())
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    bits.parse::<u8>().is_ok_and(|b| b <= max)
}

pub(super) fn check_secrets(secrets: &Params) -> Result<(), ValidationError> {
    if let Some(text) = secrets.get(MANAGEMENT_KUBECONFIG) {
        crate::kubernetes::parse_kubeconfig(text, None, false)
            .map_err(|e| ValidationError::new(MANAGEMENT_KUBECONFIG, e.message))?;
    }
    Ok(())
}

fn per_tenant(config: &Params) -> bool {
    setting(config, NAMESPACE_PER_TENANT) == Some("true")
}

/// The namespace of a tenant's clusters in the management cluster.
pub(super) fn namespace(config: &Params, tenant: &str) -> String {
    let base = setting(config, NAMESPACE).unwrap_or(DEFAULT_NAMESPACE);
    if per_tenant(config) {
        // A tenant slug is a label itself: the prefix's limit keeps the whole within 63.
        let mut ns = format!("{base}-{tenant}");
        ns.truncate(63);
        ns.trim_end_matches('-').to_owned()
    } else {
        base.to_owned()
    }
}

/// Whether the ClusterClass's worker classes are MachinePools.
pub(super) fn machine_pools(config: &Params) -> bool {
    setting(config, WORKER_POOLS) == Some("machine-pools")
}

/// Whether each tenant has a namespace of its own (created by KQueen when missing).
pub(super) fn namespace_per_tenant(config: &Params) -> bool {
    per_tenant(config)
}

/// The name of a KQueen cluster's `Cluster` object: the cluster's own name in a tenant's
/// namespace; prefixed with the tenant in a shared one (names are unique per tenant only),
/// shortened with part of the cluster's id when that is too long.
pub(super) fn object_name(ctx: &OpContext) -> String {
    if per_tenant(&ctx.provider_config) {
        return ctx.cluster_name.clone();
    }
    let full = format!("{}-{}", ctx.tenant, ctx.cluster_name);
    if full.len() <= 63 {
        return full;
    }
    let id = ctx.cluster_id.simple().to_string();
    let mut head = ctx.cluster_name.clone();
    head.truncate(54);
    format!("{}-{}", head.trim_end_matches('-'), &id[id.len() - 8..])
}

/// The management cluster's kubeconfig.
pub(super) fn management_kubeconfig(ctx: &OpContext) -> Result<&str, ProvisionError> {
    let secret = ctx.secret(MANAGEMENT_KUBECONFIG)?;
    std::str::from_utf8(secret.expose()).map_err(|_| {
        ProvisionError::Failed("the management cluster's kubeconfig is not UTF-8 text".into())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Params {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn namespaces_are_shared_or_per_tenant() {
        assert_eq!(namespace(&config(&[]), "team-a"), "default");
        assert_eq!(namespace(&config(&[(NAMESPACE, "capi")]), "team-a"), "capi");
        let per = config(&[(NAMESPACE, "kq"), (NAMESPACE_PER_TENANT, "true")]);
        assert_eq!(namespace(&per, "team-a"), "kq-team-a");
    }

    #[test]
    fn object_names_stay_unique_and_short() {
        let mut ctx = OpContext::new("dev", "team-a", "/tmp".into());
        assert_eq!(object_name(&ctx), "team-a-dev");
        ctx.provider_config = config(&[(NAMESPACE_PER_TENANT, "true")]);
        assert_eq!(object_name(&ctx), "dev");
        ctx.provider_config = Params::new();
        ctx.cluster_name = "c".repeat(63);
        let long = object_name(&ctx);
        assert!(long.len() <= 63 && is_label(&long), "{long}");
    }

    #[test]
    fn provider_settings_are_checked() {
        assert!(check_provider(&config(&[(CLUSTER_CLASS, "quick-start")])).is_ok());
        let e = check_provider(&config(&[])).unwrap_err();
        assert_eq!(e.field, CLUSTER_CLASS);
        let e = check_provider(&config(&[(CLUSTER_CLASS, "Quick Start")])).unwrap_err();
        assert_eq!(e.field, CLUSTER_CLASS);
        let e =
            check_provider(&config(&[(CLUSTER_CLASS, "q"), (FLAVOR_VARIABLE, "a b")])).unwrap_err();
        assert_eq!(e.field, FLAVOR_VARIABLE);
        let e =
            check_provider(&config(&[(CLUSTER_CLASS, "q"), (POD_CIDR, "10.0.0.0")])).unwrap_err();
        assert_eq!(e.field, POD_CIDR);
        assert!(check_provider(&config(&[
            (CLUSTER_CLASS, "q"),
            (SERVICE_CIDR, "fd00::/108")
        ]))
        .is_ok());
        let e = check_secrets(&config(&[(MANAGEMENT_KUBECONFIG, "nope: [")])).unwrap_err();
        assert_eq!(e.field, MANAGEMENT_KUBECONFIG);
    }
}
