//! Runtime `kubernetes` (the Kamaji design): each control plane runs as a Deployment in an
//! admin cluster the provider names. Per tenant cluster, in its own Namespace: a Secret with
//! the certificates, keys and the kubeconfigs of the controller manager and the scheduler; a
//! Deployment whose pods run kube-apiserver, kube-controller-manager and kube-scheduler at
//! the version's images; and a Service exposing the API server (LoadBalancer, or NodePort on the provider's address). Everything
//! is applied server-side (field manager `kqueen`) and carries owner labels. Ready is the
//! rollout complete (as `kubectl rollout status` reads it) and `/readyz` answering; an
//! upgrade is a rolling update of the images; delete removes the Namespace, and with it all
//! the rest.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use uuid::Uuid;

use super::runtime::{Endpoint, Launch, Rollout, Runtime};
use super::settings::{self, ServiceType};
use super::{failed, transient};
use crate::hosted::control_plane::{ControlPlaneFiles, ControlPlaneSpec};
use crate::provisioner::{OpContext, ProvisionError, Step};

/// The field manager of everything KQueen applies.
const MANAGER: &str = "kqueen";
/// The owner labels every object carries.
pub const CLUSTER_LABEL: &str = "kqueen.io/cluster";
pub const TENANT_LABEL: &str = "kqueen.io/tenant";
const COMPONENT: (&str, &str) = ("app.kubernetes.io/component", "control-plane");
/// Object names inside the cluster's Namespace.
pub const PKI_SECRET: &str = "control-plane-pki";
pub const DEPLOYMENT: &str = "control-plane";
pub const SERVICE: &str = "kube-apiserver";
/// The user and group the control-plane containers run as (not root).
const NON_ROOT: i64 = 65532;
/// Where the containers see the Secret's files.
pub const PKI_DIR: &str = "/etc/kqueen/pki";
/// The API server's port on the Service (and in its pod behind a load balancer).
pub const API_PORT: u16 = 6443;

/// The Namespace of a cluster's control plane in the admin cluster.
pub fn namespace(cluster_id: Uuid) -> String {
    format!("kqueen-hosted-{cluster_id}")
}

/// Runs control planes as Deployments of the provider's admin cluster.
pub(super) struct KubernetesRuntime;

fn apply() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

/// A failed call to the admin cluster: refusals (4xx but conflicts and throttling) fail the
/// operation, the rest is retried.
fn kube_error(what: &str, e: kube::Error) -> ProvisionError {
    match &e {
        kube::Error::Api(s)
            if (400..500).contains(&s.code) && ![408, 409, 429].contains(&s.code) =>
        {
            failed(format!("{what}: the admin cluster refused: {}", s.message))
        }
        _ => transient(format!("{what}: {e}")),
    }
}

async fn admin_client(ctx: &OpContext) -> Result<kube::Client, ProvisionError> {
    let text = settings::secret_text(ctx, settings::ADMIN_KUBECONFIG)?;
    let parsed = crate::kubernetes::parse_kubeconfig(text, None, false)
        .map_err(|e| failed(format!("the admin cluster's kubeconfig: {}", e.message)))?;
    crate::kubernetes::client(&parsed, Duration::from_secs(10))
        .await
        .map_err(|e| transient(format!("cannot reach the admin cluster: {e}")))
}

/// The owner labels of the cluster's objects.
fn owner_labels(ctx: &OpContext) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("app.kubernetes.io/managed-by".into(), MANAGER.into()),
        ("app.kubernetes.io/part-of".into(), "kqueen-hosted".into()),
        (CLUSTER_LABEL.into(), ctx.cluster_id.to_string()),
        (TENANT_LABEL.into(), ctx.tenant.clone()),
    ])
}

/// The labels that select the cluster's control-plane pods.
fn pod_selector(ctx: &OpContext) -> BTreeMap<String, String> {
    BTreeMap::from([
        (CLUSTER_LABEL.into(), ctx.cluster_id.to_string()),
        (COMPONENT.0.into(), COMPONENT.1.into()),
    ])
}

fn meta(ctx: &OpContext, name: &str) -> serde_json::Value {
    json!({
        "name": name,
        "namespace": namespace(ctx.cluster_id),
        "labels": owner_labels(ctx),
    })
}

fn service(ctx: &OpContext) -> Result<serde_json::Value, ProvisionError> {
    let kind = settings::service_type(&ctx.provider_config).map_err(failed)?;
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(ctx, SERVICE),
        "spec": {
            "type": kind.as_str(),
            "selector": pod_selector(ctx),
            // The pod's port named https: 6443 behind a load balancer, the node port itself
            // with NodePort (what the API server advertises must be where nodes reach it).
            "ports": [{
                "name": "https",
                "port": API_PORT,
                "targetPort": "https",
                "protocol": "TCP",
            }],
        },
    }))
}

fn pki_secret(ctx: &OpContext, launch: &Launch, spec: &ControlPlaneSpec) -> Secret {
    let data = ControlPlaneFiles::contents(
        &launch.pki,
        &launch.etcd_server_ca,
        &launch.etcd_client,
        spec,
    )
    .into_iter()
    .map(|(name, body)| (name, ByteString(body.expose().to_vec())))
    .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(PKI_SECRET.into()),
            namespace: Some(namespace(ctx.cluster_id)),
            labels: Some(owner_labels(ctx)),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Secret::default()
    }
}

/// An HTTPS probe of the API server's own port.
fn probe(path: &str, period: u32, failures: u32) -> serde_json::Value {
    json!({
        "httpGet": {"path": path, "port": "https", "scheme": "HTTPS"},
        "periodSeconds": period,
        "failureThreshold": failures,
        "timeoutSeconds": 5,
    })
}

fn deployment(
    ctx: &OpContext,
    launch: &Launch,
    spec: &ControlPlaneSpec,
    replicas: i32,
) -> serde_json::Value {
    let files = ControlPlaneFiles::at(Path::new(PKI_DIR));
    let mut pod_labels = owner_labels(ctx);
    pod_labels.extend(pod_selector(ctx));
    let mount = json!([{"name": "pki", "mountPath": PKI_DIR, "readOnly": true}]);
    // What the Pod Security "restricted" level asks: admin clusters may enforce it.
    let hardened = json!({
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
    });
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(ctx, DEPLOYMENT),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": pod_selector(ctx)},
            // A new API server is up before an old one goes: the API stays available.
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
            },
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "automountServiceAccountToken": false,
                    "enableServiceLinks": false,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "runAsUser": NON_ROOT,
                        "runAsGroup": NON_ROOT,
                        "fsGroup": NON_ROOT,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "kube-apiserver",
                            "image": launch.artifacts.apiserver,
                            "command": ["kube-apiserver"],
                            "args": files.apiserver_args(spec),
                            "ports": [{"name": "https", "containerPort": spec.port, "protocol": "TCP"}],
                            "volumeMounts": mount,
                            "startupProbe": probe("/livez", 5, 60),
                            "livenessProbe": probe("/livez", 10, 6),
                            "readinessProbe": probe("/readyz", 5, 3),
                            "resources": {"requests": {"cpu": "250m", "memory": "384Mi"}},
                            "securityContext": hardened,
                        },
                        {
                            "name": "kube-controller-manager",
                            "image": launch.artifacts.controller_manager,
                            "command": ["kube-controller-manager"],
                            "args": files.controller_manager_args(spec),
                            "volumeMounts": mount,
                            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                            "securityContext": hardened,
                        },
                        {
                            "name": "kube-scheduler",
                            "image": launch.artifacts.scheduler,
                            "command": ["kube-scheduler"],
                            "args": files.scheduler_args(spec),
                            "volumeMounts": mount,
                            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                            "securityContext": hardened,
                        },
                    ],
                    "volumes": [{
                        "name": "pki",
                        // Readable by the pods' group (fsGroup), nobody else.
                        "secret": {"secretName": PKI_SECRET, "defaultMode": 0o440},
                    }],
                },
            },
        },
    })
}

/// Where the Service can be reached, once the admin cluster has said.
fn service_endpoint(
    ctx: &OpContext,
    svc: &Service,
    kind: ServiceType,
) -> Result<Option<Endpoint>, ProvisionError> {
    match kind {
        ServiceType::NodePort => {
            let port = svc
                .spec
                .as_ref()
                .and_then(|s| s.ports.as_ref())
                .and_then(|p| p.first())
                .and_then(|p| p.node_port)
                .and_then(|p| u16::try_from(p).ok());
            let host = settings::address(&ctx.provider_config).map_err(failed)?;
            Ok(port.map(|port| Endpoint {
                host: host.to_string(),
                port,
            }))
        }
        ServiceType::LoadBalancer => Ok(svc
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .and_then(|i| i.first())
            .and_then(|i| i.ip.clone().or_else(|| i.hostname.clone()))
            .filter(|h| !h.is_empty())
            .map(|host| Endpoint {
                host,
                port: API_PORT,
            })),
    }
}

/// The address the API server advertises to the tenant's nodes: the endpoint's, resolved
/// when the load balancer gave a host name (kube-apiserver advertises an IP address).
async fn advertised(endpoint: &Endpoint) -> Result<std::net::IpAddr, ProvisionError> {
    if let Ok(ip) = endpoint.host.parse() {
        return Ok(ip);
    }
    let found = tokio::net::lookup_host((endpoint.host.as_str(), endpoint.port))
        .await
        .map_err(|e| transient(format!("{} does not resolve yet: {e}", endpoint.host)))?
        .map(|a| a.ip())
        .min_by_key(|ip| ip.is_ipv6());
    found.ok_or_else(|| transient(format!("{} has no address yet", endpoint.host)))
}

/// How far the Deployment's rollout has got, as `kubectl rollout status` reads it.
pub(super) fn rollout_of(d: &Deployment) -> Rollout {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let generation = d.metadata.generation.unwrap_or_default();
    let Some(status) = d
        .status
        .as_ref()
        .filter(|s| s.observed_generation.is_some())
    else {
        return Rollout::Rolling("the admin cluster has not started the control plane yet".into());
    };
    if status.observed_generation.unwrap_or_default() < generation {
        return Rollout::Rolling("the admin cluster has not seen the new spec yet".into());
    }
    let updated = status.updated_replicas.unwrap_or_default();
    let total = status.replicas.unwrap_or_default();
    let available = status.available_replicas.unwrap_or_default();
    if updated < want {
        return Rollout::Rolling(format!("{updated} of {want} control-plane pods updated"));
    }
    if total > updated {
        return Rollout::Rolling(format!(
            "{} old control-plane pod(s) still running",
            total - updated
        ));
    }
    if available < updated {
        return Rollout::Rolling(format!(
            "{available} of {updated} control-plane pods available"
        ));
    }
    Rollout::Complete
}

#[async_trait]
impl Runtime for KubernetesRuntime {
    /// Applies the Namespace and the Service, then reads the Service's address.
    async fn reserve(&self, ctx: &OpContext) -> Result<Step<Endpoint>, ProvisionError> {
        let client = admin_client(ctx).await?;
        let ns = namespace(ctx.cluster_id);
        let body = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": ns, "labels": owner_labels(ctx)},
        });
        Api::<Namespace>::all(client.clone())
            .patch(&ns, &apply(), &Patch::Apply(&body))
            .await
            .map_err(|e| kube_error("applying the Namespace", e))?;
        let services: Api<Service> = Api::namespaced(client, &ns);
        let svc = services
            .patch(SERVICE, &apply(), &Patch::Apply(&service(ctx)?))
            .await
            .map_err(|e| kube_error("applying the Service", e))?;
        let kind = settings::service_type(&ctx.provider_config).map_err(failed)?;
        Ok(match service_endpoint(ctx, &svc, kind)? {
            Some(endpoint) => Step::Done(endpoint),
            None => Step::Wait(Duration::from_secs(2)),
        })
    }

    /// The Service's in-cluster names, and the loopback address the controller manager
    /// reaches its API server at inside the pod.
    fn extra_names(&self, ctx: &OpContext) -> Vec<String> {
        let ns = namespace(ctx.cluster_id);
        vec![
            format!("{SERVICE}.{ns}.svc"),
            format!("{SERVICE}.{ns}.svc.cluster.local"),
            "127.0.0.1".into(),
        ]
    }

    /// Applies the Secret, then the Deployment (a changed image rolls the pods).
    async fn start(&self, ctx: &OpContext, launch: &Launch) -> Result<(), ProvisionError> {
        let replicas = settings::replicas(&ctx.provider_config).map_err(failed)?;
        let kind = settings::service_type(&ctx.provider_config).map_err(failed)?;
        let port = match kind {
            ServiceType::NodePort => launch.endpoint.port,
            ServiceType::LoadBalancer => API_PORT,
        };
        let spec = ControlPlaneSpec::in_pod(
            launch.etcd_endpoints.clone(),
            launch.key_space.clone(),
            advertised(&launch.endpoint).await?,
            port,
            launch.version,
        );
        ctx.reporter.step(format!(
            "Rolling out the control plane in the admin cluster ({replicas} pod(s), {})",
            launch.artifacts.apiserver
        ));
        let client = admin_client(ctx).await?;
        let ns = namespace(ctx.cluster_id);
        Api::<Secret>::namespaced(client.clone(), &ns)
            .patch(
                PKI_SECRET,
                &apply(),
                &Patch::Apply(&pki_secret(ctx, launch, &spec)),
            )
            .await
            .map_err(|e| kube_error("applying the certificates' Secret", e))?;
        Api::<Deployment>::namespaced(client, &ns)
            .patch(
                DEPLOYMENT,
                &apply(),
                &Patch::Apply(&deployment(ctx, launch, &spec, replicas)),
            )
            .await
            .map_err(|e| kube_error("applying the Deployment", e))?;
        Ok(())
    }

    async fn rollout(&self, ctx: &OpContext) -> Result<Rollout, ProvisionError> {
        let client = admin_client(ctx).await?;
        let deployments: Api<Deployment> = Api::namespaced(client, &namespace(ctx.cluster_id));
        match deployments.get_opt(DEPLOYMENT).await {
            Ok(Some(d)) => Ok(rollout_of(&d)),
            Ok(None) => Ok(Rollout::Lost),
            Err(e) => Err(kube_error("reading the Deployment", e)),
        }
    }

    fn ready_within(&self) -> Duration {
        // Images may have to be pulled first.
        Duration::from_secs(600)
    }

    /// The Deployment's conditions, or the Service's state before there is one.
    async fn diagnosis(&self, ctx: &OpContext) -> String {
        let Ok(client) = admin_client(ctx).await else {
            return "the admin cluster cannot be reached".into();
        };
        let ns = namespace(ctx.cluster_id);
        let deployments: Api<Deployment> = Api::namespaced(client, &ns);
        match deployments.get_opt(DEPLOYMENT).await {
            Ok(Some(d)) => {
                let conditions: Vec<String> = d
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        format!(
                            "{}={}: {}",
                            c.type_,
                            c.status,
                            c.message.clone().unwrap_or_default()
                        )
                    })
                    .collect();
                let rollout = match rollout_of(&d) {
                    Rollout::Rolling(why) => why,
                    Rollout::Complete => "the pods run but /readyz does not answer".into(),
                    Rollout::Lost => String::new(),
                };
                format!(
                    "Deployment {ns}/{DEPLOYMENT}: {rollout}; {}",
                    conditions.join("; ")
                )
            }
            Ok(None) => format!("there is no Deployment {ns}/{DEPLOYMENT} yet (Service {SERVICE} waits for an address)"),
            Err(e) => format!("reading Deployment {ns}/{DEPLOYMENT}: {e}"),
        }
    }

    /// The admin cluster keeps the Deployment running: nothing to do.
    fn needs_resume(&self) -> bool {
        false
    }

    async fn resume(&self, _ctx: &OpContext, _launch: &Launch) -> Result<(), ProvisionError> {
        Ok(())
    }

    /// Deletes the Namespace (and so everything in it); waits until it is gone.
    async fn stop(&self, ctx: &OpContext) -> Result<Step<()>, ProvisionError> {
        let client = admin_client(ctx).await?;
        let ns = namespace(ctx.cluster_id);
        let namespaces: Api<Namespace> = Api::all(client);
        match namespaces.get_opt(&ns).await {
            Ok(None) => return Ok(Step::Done(())),
            Ok(Some(found)) if found.metadata.deletion_timestamp.is_some() => {
                return Ok(Step::Wait(Duration::from_secs(2)));
            }
            Ok(Some(_)) => {}
            Err(e) => return Err(kube_error("reading the Namespace", e)),
        }
        ctx.reporter
            .log(format!("deleting Namespace {ns} in the admin cluster"));
        match namespaces.delete(&ns, &DeleteParams::background()).await {
            Ok(_) => Ok(Step::Wait(Duration::from_secs(2))),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Step::Done(())),
            Err(e) => Err(kube_error("deleting the Namespace", e)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStatus};

    fn deployment(generation: i64, status: Option<DeploymentStatus>) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                generation: Some(generation),
                ..ObjectMeta::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(2),
                ..DeploymentSpec::default()
            }),
            status,
        }
    }

    fn status(observed: i64, total: i32, updated: i32, available: i32) -> DeploymentStatus {
        DeploymentStatus {
            observed_generation: Some(observed),
            replicas: Some(total),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            ..DeploymentStatus::default()
        }
    }

    #[test]
    fn a_rollout_is_complete_only_when_every_new_pod_is_available_and_no_old_one_runs() {
        assert!(matches!(
            rollout_of(&deployment(1, None)),
            Rollout::Rolling(_)
        ));
        let cases = [
            (status(1, 2, 2, 2), 2, false), // the new spec is not seen yet
            (status(2, 2, 1, 2), 2, false), // one pod still old
            (status(2, 3, 2, 2), 2, false), // surge: an old pod still runs
            (status(2, 2, 2, 1), 2, false), // one new pod not available
            (status(2, 2, 2, 2), 2, true),
        ];
        for (s, generation, complete) in cases {
            let got = rollout_of(&deployment(generation, Some(s.clone())));
            assert_eq!(got == Rollout::Complete, complete, "{s:?}: {got:?}");
        }
    }
}
