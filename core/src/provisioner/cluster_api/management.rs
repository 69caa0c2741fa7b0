//! The management cluster: a client from the provider's kubeconfig, the API version of
//! `cluster.x-k8s.io` it serves (read from discovery, newest KQueen speaks), and typed access
//! to its Clusters, Machines, ClusterClasses and kubeconfig Secrets.

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::Value;

use super::settings;
use super::topology::{GROUP, VERSIONS};
use crate::provisioner::{OpContext, ProvisionError};

/// The resources KQueen uses, as `kubectl get crd` names them.
const RESOURCES: [(&str, &str); 3] = [
    ("clusters", "Cluster"),
    ("machines", "Machine"),
    ("clusterclasses", "ClusterClass"),
];

pub(super) fn failed(msg: impl Into<String>) -> ProvisionError {
    ProvisionError::Failed(msg.into())
}

pub(super) fn transient(msg: impl Into<String>) -> ProvisionError {
    ProvisionError::Transient(msg.into())
}

/// A failed call: refusals (4xx but conflicts and throttling) fail the operation, the rest
/// (the management cluster unreachable, 5xx) is retried.
pub(super) fn kube_error(what: &str, e: kube::Error) -> ProvisionError {
    match &e {
        kube::Error::Api(s)
            if (400..500).contains(&s.code) && ![408, 409, 429].contains(&s.code) =>
        {
            failed(format!(
                "{what}: the management cluster refused: {}",
                s.message
            ))
        }
        _ => transient(format!(
            "{what}: {}",
            crate::kubernetes::one_line(&e.to_string(), 300)
        )),
    }
}

pub(super) fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// A connection to the management cluster at the Cluster API version it serves.
pub(super) struct Management {
    pub client: kube::Client,
    /// `v1beta2` or `v1beta1`.
    pub version: &'static str,
}

impl Management {
    /// Connects and reads which Cluster API versions are served. Errors name what is
    /// missing: the whole group (Cluster API not installed) or some of its resources.
    pub(super) async fn connect(ctx: &OpContext) -> Result<Self, ProvisionError> {
        let text = settings::management_kubeconfig(ctx)?;
        let parsed = crate::kubernetes::parse_kubeconfig(text, None, false).map_err(|e| {
            failed(format!(
                "the management cluster's kubeconfig: {}",
                e.message
            ))
        })?;
        let client = crate::kubernetes::client(&parsed, Duration::from_secs(10))
            .await
            .map_err(|e| transient(format!("cannot reach the management cluster: {e}")))?;
        let groups = client
            .list_api_groups()
            .await
            .map_err(|e| kube_error("cannot reach the management cluster", e))?;
        let served: Vec<String> = groups
            .groups
            .iter()
            .find(|g| g.name == GROUP)
            .map(|g| g.versions.iter().map(|v| v.version.clone()).collect())
            .unwrap_or_default();
        if served.is_empty() {
            return Err(failed(format!(
                "the management cluster does not serve Cluster API: the CRDs {} are missing \
                 (install Cluster API there, e.g. with clusterctl init)",
                crd_names(&RESOURCES.map(|(plural, _)| plural))
            )));
        }
        let Some(version) = VERSIONS.into_iter().find(|v| served.iter().any(|s| s == v)) else {
            return Err(failed(format!(
                "the management cluster serves {GROUP} only in {}; KQueen speaks {}",
                served.join(", "),
                VERSIONS.join(" and ")
            )));
        };
        let resources = client
            .list_api_group_resources(&format!("{GROUP}/{version}"))
            .await
            .map_err(|e| kube_error("cannot read the Cluster API resources", e))?;
        let missing: Vec<&str> = RESOURCES
            .iter()
            .map(|(plural, _)| *plural)
            .filter(|plural| !resources.resources.iter().any(|r| r.name == *plural))
            .collect();
        if !missing.is_empty() {
            return Err(failed(format!(
                "the management cluster lacks the Cluster API CRDs {} (at {GROUP}/{version})",
                crd_names(&missing)
            )));
        }
        Ok(Self { client, version })
    }

    pub(super) fn api_version(&self) -> String {
        format!("{GROUP}/{}", self.version)
    }

    fn resource(&self, plural: &str) -> ApiResource {
        let kind = RESOURCES
            .iter()
            .find(|(p, _)| *p == plural)
            .map(|(_, k)| *k)
            .unwrap_or("Cluster");
        ApiResource {
            group: GROUP.into(),
            version: self.version.into(),
            api_version: self.api_version(),
            kind: kind.into(),
            plural: plural.into(),
        }
    }

    pub(super) fn clusters(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &self.resource("clusters"))
    }

    pub(super) fn all_clusters(&self) -> Api<DynamicObject> {
        Api::all_with(self.client.clone(), &self.resource("clusters"))
    }

    pub(super) fn cluster_classes(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            namespace,
            &self.resource("clusterclasses"),
        )
    }

    /// A Cluster as JSON, None when there is none.
    pub(super) async fn cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Value>, ProvisionError> {
        match self.clusters(namespace).get(name).await {
            Ok(o) => serde_json::to_value(o)
                .map(Some)
                .map_err(|e| failed(format!("the Cluster {namespace}/{name}: {e}"))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(kube_error(
                &format!("cannot read the Cluster {namespace}/{name}"),
                e,
            )),
        }
    }

    /// The Machines of a namespace.
    pub(super) fn machines_api(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &self.resource("machines"))
    }

    /// The Machines of a cluster, as JSON.
    pub(super) async fn machines(
        &self,
        namespace: &str,
        cluster: &str,
    ) -> Result<Vec<Value>, ProvisionError> {
        let list = self
            .machines_api(namespace)
            .list(
                &ListParams::default().labels(&format!("cluster.x-k8s.io/cluster-name={cluster}")),
            )
            .await
            .map_err(|e| kube_error("cannot list the cluster's Machines", e))?;
        Ok(list
            .items
            .into_iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect())
    }

    /// The `value` of the cluster's kubeconfig Secret: None while the Secret or the key is
    /// missing.
    pub(super) async fn kubeconfig_secret(
        &self,
        namespace: &str,
        cluster: &str,
    ) -> Result<Option<Vec<u8>>, ProvisionError> {
        let name = kubeconfig_secret_name(cluster);
        match Api::<Secret>::namespaced(self.client.clone(), namespace)
            .get(&name)
            .await
        {
            Ok(secret) => Ok(secret.data.and_then(|mut d| d.remove("value")).map(|b| b.0)),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(kube_error(
                &format!("cannot read the Secret {namespace}/{name}"),
                e,
            )),
        }
    }
}

/// Where Cluster API keeps a cluster's admin kubeconfig.
pub(super) fn kubeconfig_secret_name(cluster: &str) -> String {
    format!("{cluster}-kubeconfig")
}

fn crd_names(plurals: &[&str]) -> String {
    plurals
        .iter()
        .map(|p| format!("{p}.{GROUP}"))
        .collect::<Vec<_>>()
        .join(", ")
}
