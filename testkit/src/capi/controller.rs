//! The fake Cluster API controller: every tick, each Cluster moves one stage on
//! (infrastructure, control plane initialized with its kubeconfig Secret, control plane
//! available, then one Machine action per tick until the topology is met), and a deleted
//! Cluster loses its Machines, then its finalizer. Annotations (see the constants in
//! [`super`]) make a Cluster fail, hang or publish a broken kubeconfig.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use kube::core::ApiResource;
use kube::{Api, Client, ResourceExt};
use serde_json::json;

use super::conditions::Status;
use super::deletion;
use super::machines::Fleet;
use super::pools::{self, Pooled, Pools};
use super::{
    Served, BAD_KUBECONFIG_ANNOTATION, CLUSTER_NAME_LABEL, FAIL_ANNOTATION,
    NO_KUBECONFIG_ANNOTATION, STUCK_ANNOTATION,
};

const MANAGER: &str = "kqueen-fake-capi";
const WAITING: &str = "Waiting for the first control plane machine";
const WAITING_MANAGED: &str = "Waiting for the managed control plane";

/// A Cluster API controller for tests, running until dropped.
pub struct FakeCapi {
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct Shared {
    kubeconfig: Mutex<Option<String>>,
    paused: AtomicBool,
}

impl FakeCapi {
    /// Starts reconciling every Cluster of the newest `served` version, once per `tick`.
    /// Clusters wait before their control plane is initialized until
    /// [`FakeCapi::set_kubeconfig`] is called.
    pub fn start(client: Client, served: Served, tick: Duration) -> Self {
        let shared = Arc::new(Shared::default());
        let reconciler = Reconciler {
            client,
            v2: served == Served::Both,
            clusters: served.resource("Cluster"),
            machines: served.resource("Machine"),
            shared: shared.clone(),
            pools: Pools::default(),
        };
        let task = tokio::spawn(async move {
            loop {
                if !reconciler.shared.paused.load(Ordering::Relaxed) {
                    reconciler.tick().await;
                }
                tokio::time::sleep(tick).await;
            }
        });
        Self { shared, task }
    }

    /// The kubeconfig every provisioned Cluster gets in its `<name>-kubeconfig` Secret
    /// (its server URL also becomes `spec.controlPlaneEndpoint`).
    pub fn set_kubeconfig(&self, yaml: String) {
        *self
            .shared
            .kubeconfig
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(yaml);
    }

    /// Stops (`true`) or resumes (`false`) all reconciling.
    pub fn pause(&self, paused: bool) {
        self.shared.paused.store(paused, Ordering::Relaxed);
    }
}

impl Drop for FakeCapi {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Reconciler {
    client: Client,
    v2: bool,
    clusters: ApiResource,
    machines: ApiResource,
    shared: Arc<Shared>,
    pools: Pools,
}

impl Reconciler {
    async fn tick(&self) {
        let all: Api<DynamicObject> = Api::all_with(self.client.clone(), &self.clusters);
        let clusters = match all.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) => return eprintln!("fake capi: list Clusters: {e}"),
        };
        // A deleted Cluster's pool replicas go with it.
        let live: HashSet<String> = clusters
            .iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter_map(|c| c.uid())
            .collect();
        self.pools.retain(&live);
        for cluster in &clusters {
            if let Err(e) = self.reconcile(cluster).await {
                let (ns, name) = (cluster.namespace().unwrap_or_default(), cluster.name_any());
                eprintln!("fake capi: Cluster {ns}/{name}: {e}");
            }
        }
    }

    async fn reconcile(&self, cluster: &DynamicObject) -> Result<(), String> {
        let ns = cluster.namespace().unwrap_or_default();
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &ns, &self.clusters);
        let machines: Api<DynamicObject> =
            Api::namespaced_with(self.client.clone(), &ns, &self.machines);
        let mut status = Status::of(cluster, self.v2);
        let ready = if self.v2 { "Available" } else { "Ready" };
        if cluster.metadata.deletion_timestamp.is_some() {
            return deletion::delete(&self.client, self.v2, cluster, &api, &machines, status).await;
        }
        deletion::ensure_finalizer(cluster, &api).await?;
        let annotations = cluster.annotations();
        if let Some(message) = annotations.get(FAIL_ANNOTATION) {
            status.put(&["phase"], json!("Failed"));
            let failure = if self.v2 {
                &["deprecated", "v1beta1"][..]
            } else {
                &[][..]
            };
            status.put(
                &[failure, &["failureReason"]].concat(),
                json!("CreateError"),
            );
            status.put(&[failure, &["failureMessage"]].concat(), json!(message));
            status.set_warning(ready, false, "Failed", message);
            return status.write(&api, cluster).await;
        }
        if cluster.data["spec"]["paused"] == true {
            return Ok(());
        }
        if !status.is_true("InfrastructureReady") {
            let waiting = if pools::managed_control_plane(cluster) {
                WAITING_MANAGED
            } else {
                WAITING
            };
            return self
                .infrastructure(status, waiting)
                .write(&api, cluster)
                .await;
        }
        if let Some(message) = annotations.get(STUCK_ANNOTATION) {
            status.set(
                "ControlPlaneInitialized",
                false,
                "WaitingForControlPlane",
                message,
            );
            status.set(ready, false, "WaitingForControlPlane", message);
            return status.write(&api, cluster).await;
        }
        if !status.is_true("ControlPlaneInitialized") {
            let kubeconfig = self
                .shared
                .kubeconfig
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let Some(kubeconfig) = kubeconfig else {
                return Ok(());
            };
            self.publish(cluster, &api, &kubeconfig).await?;
            status.set("ControlPlaneInitialized", true, "Initialized", "");
            if self.v2 {
                status.put(&["initialization", "controlPlaneInitialized"], json!(true));
            }
            let waiting = "Waiting for the control plane to become available";
            status.set(ready, false, "WaitingForControlPlane", waiting);
            return status.write(&api, cluster).await;
        }
        let available = if self.v2 {
            "ControlPlaneAvailable"
        } else {
            "ControlPlaneReady"
        };
        if !status.is_true(available) {
            status.set(available, true, "Available", "");
            if !self.v2 {
                status.put(&["controlPlaneReady"], json!(true));
            }
            status.put(&["phase"], json!("Provisioned"));
            status.set(ready, false, "ScalingUp", "Waiting for machines");
            return status.write(&api, cluster).await;
        }
        let fleet = Fleet::read(&machines, &self.machines.api_version, cluster).await?;
        let moved = fleet.step(&machines).await?;
        let fleet = if moved {
            Fleet::read(&machines, &self.machines.api_version, cluster).await?
        } else {
            fleet
        };
        // One action per tick: the pools move when the Machines did not.
        let pooled = self.pools.step(cluster, !moved);
        self.summarize(&mut status, cluster, &fleet, &pooled);
        status.write(&api, cluster).await
    }

    /// Stage 0: the infrastructure is there, the control plane not yet.
    fn infrastructure(&self, mut status: Status, waiting: &str) -> Status {
        status.put(&["phase"], json!("Provisioning"));
        status.set("InfrastructureReady", true, "Ready", "");
        if self.v2 {
            status.put(
                &["initialization", "infrastructureProvisioned"],
                json!(true),
            );
            status.set(
                "ControlPlaneAvailable",
                false,
                "WaitingForControlPlane",
                waiting,
            );
            status.set("WorkersAvailable", false, "WaitingForControlPlane", waiting);
            status.set("Available", false, "WaitingForControlPlane", waiting);
        } else {
            status.put(&["infrastructureReady"], json!(true));
            status.set(
                "ControlPlaneReady",
                false,
                "WaitingForControlPlane",
                waiting,
            );
            status.set("Ready", false, "WaitingForControlPlane", waiting);
        }
        status.set(
            "ControlPlaneInitialized",
            false,
            "WaitingForControlPlane",
            waiting,
        );
        status
    }

    /// Stage 1: `spec.controlPlaneEndpoint` and the `<name>-kubeconfig` Secret.
    async fn publish(
        &self,
        cluster: &DynamicObject,
        api: &Api<DynamicObject>,
        kubeconfig: &str,
    ) -> Result<(), String> {
        let name = cluster.name_any();
        let ns = cluster.namespace().unwrap_or_default();
        let (host, port) = endpoint(kubeconfig)?;
        let patch = json!({"spec": {"controlPlaneEndpoint": {"host": host, "port": port}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|e| format!("set controlPlaneEndpoint: {e}"))?;
        let annotations = cluster.annotations();
        if annotations.contains_key(NO_KUBECONFIG_ANNOTATION) {
            return Ok(());
        }
        let value: &[u8] = if annotations.contains_key(BAD_KUBECONFIG_ANNOTATION) {
            b"this is not a kubeconfig"
        } else {
            kubeconfig.as_bytes()
        };
        let secret = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": format!("{name}-kubeconfig"),
                "namespace": ns,
                "labels": {CLUSTER_NAME_LABEL: name},
                "ownerReferences": [{
                    "apiVersion": self.clusters.api_version,
                    "kind": "Cluster",
                    "name": name,
                    "uid": cluster.uid().unwrap_or_default(),
                }],
            },
            "type": "cluster.x-k8s.io/secret",
            "data": {"value": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, value)},
        });
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        secrets
            .patch(
                &format!("{name}-kubeconfig"),
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&secret),
            )
            .await
            .map(|_| ())
            .map_err(|e| format!("write kubeconfig Secret: {e}"))
    }

    /// After stage 2: the conditions and counts of the Machines and the pools' replicas.
    fn summarize(
        &self,
        status: &mut Status,
        cluster: &DynamicObject,
        fleet: &Fleet,
        pooled: &Pooled,
    ) {
        let (control_plane, mut workers, orphans) = fleet.counts();
        workers.add(&pooled.count);
        let done = control_plane.done() && workers.done() && orphans == 0;
        let desired = control_plane.desired + workers.desired;
        let ready = control_plane.ready + workers.ready;
        let managed = pools::managed_control_plane(cluster);
        // A managed control plane has no count of its own (a merge patch's null removes it).
        let control_plane_json = if managed {
            serde_json::Value::Null
        } else {
            control_plane.to_json()
        };
        let reason = if fleet.rolling() || pooled.rolling {
            "RollingOut"
        } else if orphans > 0
            || control_plane.replicas > control_plane.desired
            || workers.replicas > workers.desired
        {
            "ScalingDown"
        } else {
            "ScalingUp"
        };
        let message = format!("{ready} of {desired} machines ready");
        let message = if done { "" } else { message.as_str() };
        if status.v2() {
            status.put(&["controlPlane"], control_plane_json);
            status.put(&["workers"], workers.to_json());
            let workers_done = workers.done() && orphans == 0;
            let workers_message = format!(
                "{} of {} worker machines ready",
                workers.ready, workers.desired
            );
            let workers_message = if workers_done {
                ""
            } else {
                workers_message.as_str()
            };
            let workers_reason = if workers_done { "Available" } else { reason };
            status.set(
                "WorkersAvailable",
                workers_done,
                workers_reason,
                workers_message,
            );
            status.set(
                "Available",
                done,
                if done { "Available" } else { reason },
                message,
            );
        } else {
            if pools::has_pools(cluster) {
                // Cluster API 1.9 and later count MachinePools under status.v1beta2.
                status.put(&["v1beta2", "controlPlane"], control_plane_json);
                status.put(&["v1beta2", "workers"], workers.to_json());
            }
            status.set("Ready", done, reason, message);
        }
    }
}

/// Host and port of the kubeconfig's server.
fn endpoint(kubeconfig: &str) -> Result<(String, u16), String> {
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(kubeconfig, None, false)
        .map_err(|e| format!("the fake's kubeconfig: {e}"))?;
    let uri: http::Uri = parsed
        .server()
        .parse()
        .map_err(|e| format!("server URL {}: {e}", parsed.server()))?;
    let host = uri
        .host()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("http") {
            80
        } else {
            443
        });
    Ok((host, port))
}
