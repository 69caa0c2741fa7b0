//! The `cluster-api` provisioner: every cloud Cluster API drives (AWS, Azure, GCP, vSphere,
//! OpenStack, Metal3, Docker, and the managed EKS, AKS, GKE) through one set of objects in a
//! management cluster. KQueen writes a `Cluster` with a managed topology (`spec.topology`,
//! a ClusterClass the provider names, the parameters the template lets tenants choose),
//! server-side applied with field manager `kqueen` and labelled with the KQueen cluster and
//! tenant; then follows its conditions to an available control plane and reads the
//! kubeconfig Secret `<name>-kubeconfig` Cluster API writes.
//!
//! Scale changes the first worker pool's replicas, upgrade the topology's version; both are
//! followed on the Machines until they converge. The autoscaler's scale-down first marks the
//! Machine of the node it drained with `cluster.x-k8s.io/delete-machine`, so that this one goes. Replacing a dead node deletes the Machine
//! whose `status.nodeRef` names it (its MachineSet or control plane makes a new one) and
//! follows the same way once the old Machine is gone. Delete deletes the Cluster and waits until
//! Cluster API has removed it. Clusters that already exist can be listed and adopted
//! ([`Provisioner::discover`]): a create whose cluster state names one labels it and follows
//! it like its own.

mod adopt;
#[cfg(test)]
mod examples;
mod follow;
mod management;
mod settings;
mod status;
mod topology;

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{DeleteParams, Patch, PatchParams, PropagationPolicy};
use serde_json::{json, Value};

use super::{
    Capabilities, Discovered, OpContext, ParamSchema, Params, ProviderKind, ProvisionError,
    Provisioned, Provisioner, Step,
};
use crate::ValidationError;
use management::{failed, kube_error, Management};

/// The field manager of what KQueen writes.
const MANAGER: &str = "kqueen";

/// Installation-wide options of the `cluster-api` provisioner.
#[derive(Debug, Clone)]
pub struct ClusterApiOptions {
    /// How often a cluster that is coming up, scaling, upgrading or going away is looked at.
    pub poll: Duration,
}

impl Default for ClusterApiOptions {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(5),
        }
    }
}

/// Drives clusters through Cluster API.
pub struct ClusterApiProvisioner {
    options: ClusterApiOptions,
}

impl ClusterApiProvisioner {
    pub fn new(options: ClusterApiOptions) -> Self {
        Self { options }
    }
}

/// Where a cluster's `Cluster` object is, once known.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    pub namespace: String,
    pub name: String,
}

/// This provisioner's checkpoint of one operation.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    /// Create: the Cluster object it wrote or took over (a delete reads its create's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    /// The Cluster API version the management cluster served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    /// The step last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<String>,
    /// The Cluster's conditions at the last look, by type.
    #[serde(default)]
    seen: BTreeMap<String, String>,
    /// Scale, upgrade: the Cluster was patched; replace node: the Machine was deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    patched: bool,
    /// Replace node: the Machine deleted, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    machine: Option<String>,
}

impl Checkpoint {
    fn of(ctx: &OpContext) -> Result<Self, ProvisionError> {
        ctx.read_checkpoint("Cluster API")
    }

    fn target(&self) -> Option<Target> {
        Some(Target {
            namespace: self.namespace.clone()?,
            name: self.name.clone()?,
        })
    }
}

impl Target {
    fn from_json(v: &Value) -> Option<Self> {
        Some(Self {
            namespace: v.get("namespace")?.as_str()?.to_owned(),
            name: v.get("name")?.as_str()?.to_owned(),
        })
    }

    /// `namespace/name`, as discovery names clusters to adopt.
    pub(super) fn parse(reference: &str) -> Option<Self> {
        let (namespace, name) = reference.trim().split_once('/')?;
        (settings::is_label(namespace) && !name.is_empty() && name.len() <= 253).then(|| Self {
            namespace: namespace.into(),
            name: name.into(),
        })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The Cluster a created (or adopted) cluster is, from its state; else from the checkpoint
/// of its create, else the name KQueen would have given it.
fn target(ctx: &OpContext) -> (Target, bool) {
    if let Some(t) = Target::from_json(&ctx.cluster_state) {
        return (t, true);
    }
    let created: Option<Checkpoint> =
        crate::provisioner::read_checkpoint(&ctx.create_checkpoint, "Cluster API").ok();
    if let Some(t) = created.and_then(|c| c.target()) {
        return (t, false);
    }
    (
        Target {
            namespace: settings::namespace(&ctx.provider_config, &ctx.tenant),
            name: settings::object_name(ctx),
        },
        false,
    )
}

/// Whether a Cluster object carries this KQueen cluster's label.
fn is_ours(ctx: &OpContext, object: &Value) -> bool {
    object
        .pointer("/metadata/labels")
        .and_then(|l| l.get(topology::CLUSTER_LABEL))
        .and_then(Value::as_str)
        == Some(ctx.cluster_id.to_string().as_str())
}

fn apply_params() -> PatchParams {
    PatchParams::apply(MANAGER).force()
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(MANAGER.into()),
        ..Default::default()
    }
}

/// Writes of a scale tried at once when the Cluster changed since it was read (409).
const SCALE_ATTEMPTS: u32 = 5;
/// The annotation that makes Cluster API delete a Machine first when its pool shrinks.
const DELETE_MACHINE: &str = "cluster.x-k8s.io/delete-machine";

#[async_trait]
impl Provisioner for ClusterApiProvisioner {
    fn kind(&self) -> ProviderKind {
        ProviderKind::ClusterApi
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            scale: true,
            upgrade: true,
            deletes_infrastructure: true,
            replace_node: true,
        }
    }

    fn provider_schema(&self) -> ParamSchema {
        settings::provider_schema()
    }

    fn cluster_schema(&self) -> ParamSchema {
        settings::cluster_schema()
    }

    fn check_provider(&self, config: &Params) -> Result<(), ValidationError> {
        settings::check_provider(config)
    }

    fn check_provider_secrets(&self, secrets: &Params) -> Result<(), ValidationError> {
        settings::check_secrets(secrets)
    }

    async fn check_request(&self, ctx: &OpContext) -> Result<(), ValidationError> {
        topology::shape(&ctx.params, &ctx.provider_config).map(|_| ())
    }

    fn adopts(&self) -> bool {
        true
    }

    async fn discover(&self, ctx: &OpContext) -> Result<Vec<Discovered>, ProvisionError> {
        adopt::discover(ctx).await
    }

    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let m = Management::connect(ctx).await?;
        if Checkpoint::of(ctx)?.target().is_none() {
            let at = match ctx.cluster_state.get("adopt").and_then(Value::as_str) {
                Some(reference) => adopt::take_over(ctx, &m, reference).await?,
                None => write_cluster(ctx, &m).await?,
            };
            ctx.write_checkpoint(&Checkpoint {
                namespace: Some(at.namespace),
                name: Some(at.name),
                api_version: Some(m.api_version()),
                ..Checkpoint::default()
            });
        }
        follow::create(ctx, &m, self.options.poll).await
    }

    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let m = Management::connect(ctx).await?;
        let at = Checkpoint::of(ctx)?
            .target()
            .ok_or_else(|| failed("which Cluster this is was not recorded"))?;
        let secret = management::kubeconfig_secret_name(&at.name);
        let value = m
            .kubeconfig_secret(&at.namespace, &at.name)
            .await?
            .ok_or_else(|| {
                failed(format!(
                    "the Secret {}/{secret} with the cluster's kubeconfig (key value) is gone",
                    at.namespace
                ))
            })?;
        let text = String::from_utf8(value).map_err(|_| {
            failed(format!(
                "the Secret {}/{secret} does not hold a kubeconfig (not UTF-8 text)",
                at.namespace
            ))
        })?;
        let parsed = crate::kubernetes::parse_kubeconfig(&text, None, false).map_err(|e| {
            failed(format!(
                "the Secret {}/{secret} does not hold a usable kubeconfig: {}",
                at.namespace, e.message
            ))
        })?;
        let object = m
            .cluster(&at.namespace, &at.name)
            .await?
            .unwrap_or_default();
        let endpoint = object
            .pointer("/spec/controlPlaneEndpoint/host")
            .and_then(Value::as_str)
            .filter(|h| !h.is_empty())
            .map(|host| {
                let port = object
                    .pointer("/spec/controlPlaneEndpoint/port")
                    .and_then(Value::as_u64)
                    .unwrap_or(6443);
                format!("https://{host}:{port}")
            })
            .or_else(|| Some(parsed.server().to_owned()));
        Ok(Provisioned {
            kubeconfig: crate::vault::Secret::new(text.as_bytes()),
            endpoint,
            state: json!({
                "namespace": at.namespace,
                "name": at.name,
                "api_version": m.api_version(),
                "adopted": ctx.cluster_state.get("adopt").is_some(),
            }),
        })
    }

    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let (at, created) = target(ctx);
        let m = Management::connect(ctx).await?;
        let Some(object) = m.cluster(&at.namespace, &at.name).await? else {
            ctx.reporter.log(format!("the Cluster {at} is gone"));
            return Ok(Step::Done(()));
        };
        if !is_ours(ctx, &object) {
            // Never written by this cluster (its create failed before, or another owns it).
            ctx.reporter.log(format!(
                "the Cluster {at} is not this cluster's: left alone"
            ));
            return Ok(Step::Done(()));
        }
        if !created && ctx.cluster_state.get("adopt").is_some() {
            // An adoption that never finished: give the Cluster back instead of deleting it.
            adopt::release(ctx, &m, &at).await?;
            ctx.reporter.log(format!(
                "the adoption of {at} is undone; the Cluster is kept"
            ));
            return Ok(Step::Done(()));
        }
        follow::delete(ctx, &m, &at, &object, self.options.poll).await
    }

    async fn scale(&self, ctx: &mut OpContext, nodes: u32) -> Result<Step<()>, ProvisionError> {
        let (at, _) = target(ctx);
        let m = Management::connect(ctx).await?;
        if !Checkpoint::of(ctx)?.patched {
            // The patch carries the resourceVersion it was made from (the pool list is
            // replaced whole): when Cluster API wrote the object meanwhile, read it again
            // and retry at once, a few times, rather than wait for the engine's back-off.
            let mut attempt = 1;
            loop {
                let object = existing(&m, &at).await?;
                let patch = topology::scale_patch(&object, nodes).ok_or_else(|| {
                    failed(format!(
                        "the Cluster {at} has no worker pool in its topology to scale"
                    ))
                })?;
                match m
                    .clusters(&at.namespace)
                    .patch(&at.name, &patch_params(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => break,
                    Err(kube::Error::Api(e)) if e.code == 409 && attempt < SCALE_ATTEMPTS => {
                        attempt += 1;
                    }
                    Err(e) => return Err(kube_error(&format!("cannot scale the Cluster {at}"), e)),
                }
            }
            ctx.reporter.log(format!(
                "the first worker pool of {at} asks for {nodes} machines"
            ));
            ctx.write_checkpoint(&Checkpoint {
                patched: true,
                ..Checkpoint::default()
            });
        }
        follow::converge(ctx, &m, &at, None, self.options.poll).await
    }

    /// Marks the Machine of `node` for deletion (`cluster.x-k8s.io/delete-machine`, which
    /// Cluster API's MachineSets delete first whatever their deletion policy), then scales the
    /// worker pool down as [`Provisioner::scale`] does.
    async fn scale_down(
        &self,
        ctx: &mut OpContext,
        nodes: u32,
        node: &str,
    ) -> Result<Step<()>, ProvisionError> {
        if !Checkpoint::of(ctx)?.patched {
            let (at, _) = target(ctx);
            let m = Management::connect(ctx).await?;
            let machines = m.machines(&at.namespace, &at.name).await?;
            let name = machines
                .iter()
                .find(|o| o.pointer("/status/nodeRef/name").and_then(Value::as_str) == Some(node))
                .and_then(|o| o.pointer("/metadata/name").and_then(Value::as_str))
                .map(str::to_owned)
                .ok_or_else(|| {
                    failed(format!("no Machine of the Cluster {at} runs node {node}"))
                })?;
            let patch = json!({ "metadata": { "annotations": { DELETE_MACHINE: "yes" } } });
            m.machines_api(&at.namespace)
                .patch(&name, &patch_params(), &Patch::Merge(&patch))
                .await
                .map_err(|e| {
                    kube_error(
                        &format!("cannot mark the Machine {}/{name}", at.namespace),
                        e,
                    )
                })?;
            ctx.reporter.log(format!(
                "marked the Machine {}/{name} of node {node} to go first",
                at.namespace
            ));
        }
        self.scale(ctx, nodes).await
    }

    async fn replace_node(
        &self,
        ctx: &mut OpContext,
        node: &str,
    ) -> Result<Step<()>, ProvisionError> {
        let (at, _) = target(ctx);
        let m = Management::connect(ctx).await?;
        let checkpoint = Checkpoint::of(ctx)?;
        let machine = match checkpoint.machine {
            Some(name) if checkpoint.patched => name,
            _ => {
                let machines = m.machines(&at.namespace, &at.name).await?;
                let name = machines
                    .iter()
                    .find(|o| {
                        o.pointer("/status/nodeRef/name").and_then(Value::as_str) == Some(node)
                    })
                    .and_then(|o| o.pointer("/metadata/name").and_then(Value::as_str))
                    .map(str::to_owned)
                    .ok_or_else(|| {
                        failed(format!("no Machine of the Cluster {at} runs node {node}"))
                    })?;
                match m
                    .machines_api(&at.namespace)
                    .delete(&name, &DeleteParams::default())
                    .await
                {
                    Ok(_) => {}
                    Err(e) if management::is_not_found(&e) => {}
                    Err(e) => {
                        return Err(kube_error(
                            &format!("cannot delete the Machine {}/{name}", at.namespace),
                            e,
                        ))
                    }
                }
                ctx.reporter.log(format!(
                    "deleted the Machine {}/{name} of node {node}: Cluster API makes a new one",
                    at.namespace
                ));
                ctx.write_checkpoint(&Checkpoint {
                    patched: true,
                    machine: Some(name.clone()),
                    ..Checkpoint::default()
                });
                name
            }
        };
        let gone =
            m.machines(&at.namespace, &at.name).await?.iter().all(|o| {
                o.pointer("/metadata/name").and_then(Value::as_str) != Some(machine.as_str())
            });
        if !gone {
            let step = format!("Waiting for Cluster API to remove the Machine {machine}");
            follow::step_once(ctx, &step)?;
            return Ok(Step::Wait(self.options.poll));
        }
        follow::converge(ctx, &m, &at, None, self.options.poll).await
    }

    async fn upgrade(
        &self,
        ctx: &mut OpContext,
        version: &str,
    ) -> Result<Step<()>, ProvisionError> {
        let version = topology::version(version).map_err(failed)?;
        let (at, _) = target(ctx);
        let m = Management::connect(ctx).await?;
        if !Checkpoint::of(ctx)?.patched {
            let object = existing(&m, &at).await?;
            if topology::version_of(&object).is_none() {
                return Err(failed(format!(
                    "the Cluster {at} has no managed topology: upgrade it where it was made"
                )));
            }
            let patch = json!({"spec": {"topology": {"version": version}}});
            m.clusters(&at.namespace)
                .patch(&at.name, &patch_params(), &Patch::Merge(&patch))
                .await
                .map_err(|e| kube_error(&format!("cannot upgrade the Cluster {at}"), e))?;
            ctx.reporter
                .log(format!("the topology of {at} asks for {version}"));
            ctx.write_checkpoint(&Checkpoint {
                patched: true,
                ..Checkpoint::default()
            });
        }
        follow::converge(ctx, &m, &at, Some(&version), self.options.poll).await
    }
}

async fn existing(m: &Management, at: &Target) -> Result<Value, ProvisionError> {
    m.cluster(&at.namespace, &at.name).await?.ok_or_else(|| {
        failed(format!(
            "the Cluster {at} no longer exists in the management cluster"
        ))
    })
}

/// Writes the cluster's `Cluster` object (server-side apply), after checking its ClusterClass
/// exists and no other cluster holds the name.
async fn write_cluster(ctx: &OpContext, m: &Management) -> Result<Target, ProvisionError> {
    let shape = topology::shape(&ctx.params, &ctx.provider_config).map_err(|e| {
        failed(format!(
            "{}: {}",
            e.key.as_deref().unwrap_or(e.field),
            e.message
        ))
    })?;
    let at = Target {
        namespace: settings::namespace(&ctx.provider_config, &ctx.tenant),
        name: settings::object_name(ctx),
    };
    ctx.reporter
        .step(format!("Writing the Cluster {at} ({})", m.api_version()));
    if settings::namespace_per_tenant(&ctx.provider_config) {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": at.namespace,
            "labels": {topology::TENANT_LABEL: ctx.tenant, "app.kubernetes.io/managed-by": MANAGER},
        }});
        kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(m.client.clone())
            .patch(&at.namespace, &apply_params(), &Patch::Apply(&ns))
            .await
            .map_err(|e| kube_error(&format!("cannot create the namespace {}", at.namespace), e))?;
    }
    let class =
        settings::setting(&ctx.provider_config, settings::CLUSTER_CLASS).unwrap_or_default();
    let class_ns = settings::setting(&ctx.provider_config, settings::CLASS_NAMESPACE)
        .unwrap_or(&at.namespace)
        .to_owned();
    match m.cluster_classes(&class_ns).get(class).await {
        Ok(_) => {}
        Err(e) if management::is_not_found(&e) => {
            return Err(failed(format!(
                "the ClusterClass {class_ns}/{class} does not exist in the management cluster"
            )))
        }
        Err(e) => return Err(kube_error("cannot read the ClusterClass", e)),
    }
    if let Some(other) = m.cluster(&at.namespace, &at.name).await? {
        if !is_ours(ctx, &other) {
            return Err(failed(format!(
                "a Cluster {at} already exists and is not this cluster's (adopt it instead)"
            )));
        }
    }
    let object = topology::cluster_object(ctx, &m.api_version(), &at.namespace, &at.name, &shape);
    m.clusters(&at.namespace)
        .patch(&at.name, &apply_params(), &Patch::Apply(&object))
        .await
        .map_err(|e| kube_error(&format!("cannot write the Cluster {at}"), e))?;
    ctx.reporter.log(format!(
        "applied the Cluster {at}: ClusterClass {class}, {}, {} control plane and {} worker machines",
        shape.version,
        shape.control_plane,
        shape.pools.iter().map(|p| p.replicas).sum::<u32>()
    ));
    Ok(at)
}

/// Deletes a Cluster object, letting Cluster API remove what it made first.
async fn delete_cluster(m: &Management, at: &Target) -> Result<(), ProvisionError> {
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Background),
        ..Default::default()
    };
    match m.clusters(&at.namespace).delete(&at.name, &params).await {
        Ok(_) => Ok(()),
        Err(e) if management::is_not_found(&e) => Ok(()),
        Err(e) => Err(kube_error(&format!("cannot delete the Cluster {at}"), e)),
    }
}
