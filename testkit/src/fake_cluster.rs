//! Workloads for the fake API server: a synthetic cluster of a chosen size (nodes, namespaces,
//! Deployments with their ReplicaSets and pods, a privileged node agent with a hostPath
//! volume, a finished Job, node metrics), inserted as a real cluster's controllers would have
//! left them. Used by the browser tests' demo cluster and by the inventory benchmark.

use serde_json::{json, Value};

use crate::fake_kube::FakeKube;

/// How big the synthetic cluster is.
#[derive(Debug, Clone)]
pub struct Shape {
    pub nodes: usize,
    /// Nodes (from the last) whose Ready condition is False.
    pub not_ready_nodes: usize,
    pub namespaces: usize,
    pub deployments: usize,
    pub pods_per_deployment: usize,
    /// Deployment `i` runs `images[i % len]`.
    pub images: Vec<String>,
    /// Serve metrics.k8s.io node usage.
    pub metrics: bool,
}

impl Shape {
    /// A small cluster for demos and browser tests: 3 nodes (one NotReady), 3 namespaces,
    /// 6 Deployments, 14 pods, one of them on `:latest`.
    pub fn demo() -> Self {
        Shape {
            nodes: 3,
            not_ready_nodes: 1,
            namespaces: 3,
            deployments: 6,
            pods_per_deployment: 2,
            images: [
                "nginx:1.27",
                "ghcr.io/acme/api:latest",
                "redis:7.2",
                "quay.io/prometheus/prometheus:v3.1.0",
            ]
            .map(str::to_owned)
            .to_vec(),
            metrics: true,
        }
    }

    /// Pods the cluster holds: the Deployments', one agent per node, one Job pod.
    pub fn pods(&self) -> usize {
        self.deployments * self.pods_per_deployment + self.nodes + 1
    }
}

const T: &str = "2026-01-01T00:00:00Z";

fn owner(api_version: &str, kind: &str, name: &str) -> Value {
    json!([{"apiVersion": api_version, "kind": kind, "name": name,
            "uid": format!("uid-{name}"), "controller": true}])
}

fn container(name: &str, image: &str, cpu: &str, memory: &str) -> Value {
    json!({"name": name, "image": image,
           "resources": {"requests": {"cpu": cpu, "memory": memory},
                         "limits": {"cpu": cpu, "memory": memory}}})
}

/// Inserts the synthetic cluster into `fake`.
pub fn seed(fake: &FakeKube, shape: &Shape) {
    let node_name = |i: usize| format!("node-{i:02}");
    for i in 0..shape.nodes {
        let ready = i + shape.not_ready_nodes < shape.nodes;
        fake.insert(
            "api/v1/nodes",
            json!({"metadata": {"name": node_name(i)}, "status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "7800m", "memory": "30Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                    "reason": if ready { "KubeletReady" } else { "KubeletNotReady" }, "message": "",
                    "lastHeartbeatTime": T, "lastTransitionTime": T}],
                "nodeInfo": {"kubeletVersion": "v1.33.2", "containerRuntimeVersion": "containerd://2.0.5",
                    "osImage": "Debian GNU/Linux 12 (bookworm)", "kernelVersion": "6.1.0-30-amd64",
                    "architecture": "amd64", "operatingSystem": "linux", "machineID": "m",
                    "systemUUID": "s", "bootID": "b", "kubeProxyVersion": ""}}}),
        );
        if shape.metrics {
            fake.insert(
                "apis/metrics.k8s.io/v1beta1/nodes",
                json!({"metadata": {"name": node_name(i)}, "timestamp": T, "window": "30s",
                       "usage": {"cpu": format!("{}m", 900 + 350 * i), "memory": format!("{}Mi", 4096 + 1024 * i)}}),
            );
        }
    }
    let namespace = |i: usize| format!("team-{i:02}");
    for i in 0..shape.namespaces {
        fake.insert(
            "api/v1/namespaces",
            json!({"metadata": {"name": namespace(i)}}),
        );
    }
    let mut pod_index = 0usize;
    for d in 0..shape.deployments {
        let ns = namespace(d % shape.namespaces.max(1));
        let name = format!("app-{d:03}");
        let image = &shape.images[d % shape.images.len()];
        let rs = format!("{name}-5f7c9");
        let pods = shape.pods_per_deployment;
        // Every fifth Deployment is one pod short of ready.
        let ready = if d % 5 == 4 {
            pods.saturating_sub(1)
        } else {
            pods
        };
        let template = json!({"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [container("main", image, "250m", "256Mi")]}});
        fake.insert(
            &format!("apis/apps/v1/namespaces/{ns}/deployments"),
            json!({"metadata": {"name": name}, "spec": {"replicas": pods,
                "selector": {"matchLabels": {"app": name}}, "template": template},
                "status": {"replicas": pods, "readyReplicas": ready}}),
        );
        fake.insert(
            &format!("apis/apps/v1/namespaces/{ns}/replicasets"),
            json!({"metadata": {"name": rs, "ownerReferences": owner("apps/v1", "Deployment", &name)},
                   "spec": {"replicas": pods, "selector": {"matchLabels": {"app": name}}, "template": template}}),
        );
        for p in 0..pods {
            let running = p < ready;
            let digest = format!("sha256:{:064x}", d % shape.images.len() + 1);
            fake.insert(
                &format!("api/v1/namespaces/{ns}/pods"),
                json!({"metadata": {"name": format!("{rs}-{p}"), "labels": {"app": name},
                        "ownerReferences": owner("apps/v1", "ReplicaSet", &rs)},
                       "spec": {"nodeName": node_name(pod_index % shape.nodes.max(1)),
                                "containers": [container("main", image, "250m", "256Mi")]},
                       "status": {"phase": if running { "Running" } else { "Pending" },
                                  "containerStatuses": [{"name": "main", "image": image,
                                      "imageID": format!("{image}@{digest}"), "ready": running,
                                      "restartCount": p % 3, "state": {}}]}}),
            );
            pod_index += 1;
        }
    }
    // A privileged node agent with a hostPath volume on every node.
    fake.insert(
        "apis/apps/v1/namespaces/kube-system/daemonsets",
        json!({"metadata": {"name": "node-agent"}, "spec": {"selector": {"matchLabels": {"app": "node-agent"}},
            "template": {"metadata": {"labels": {"app": "node-agent"}},
                         "spec": {"containers": [container("agent", "registry.k8s.io/node-agent:1.4", "100m", "64Mi")]}}},
            "status": {"desiredNumberScheduled": shape.nodes, "numberReady": shape.nodes - shape.not_ready_nodes,
                       "currentNumberScheduled": shape.nodes, "numberMisscheduled": 0}}),
    );
    for i in 0..shape.nodes {
        let mut agent = container("agent", "registry.k8s.io/node-agent:1.4", "100m", "64Mi");
        agent["securityContext"] = json!({"privileged": true});
        fake.insert(
            "api/v1/namespaces/kube-system/pods",
            json!({"metadata": {"name": format!("node-agent-{i:02}"),
                    "ownerReferences": owner("apps/v1", "DaemonSet", "node-agent")},
                   "spec": {"nodeName": node_name(i), "containers": [agent],
                            "volumes": [{"name": "logs", "hostPath": {"path": "/var/log"}}]},
                   "status": {"phase": if i + shape.not_ready_nodes < shape.nodes { "Running" } else { "Unknown" }}}),
        );
    }
    // A finished Job with an untagged image.
    fake.insert(
        "apis/batch/v1/namespaces/kube-system/jobs",
        json!({"metadata": {"name": "migrate"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "m", "image": "busybox"}]}}},
               "status": {"succeeded": 1, "startTime": T, "completionTime": T,
                          "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": T}]}}),
    );
    fake.insert(
        "api/v1/namespaces/kube-system/pods",
        json!({"metadata": {"name": "migrate-q2", "ownerReferences": owner("batch/v1", "Job", "migrate")},
               "spec": {"nodeName": node_name(0), "restartPolicy": "Never",
                        "containers": [{"name": "m", "image": "busybox"}]},
               "status": {"phase": "Succeeded"}}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_synthetic_cluster_is_collected_as_seeded() {
        let fake = FakeKube::start().await;
        let shape = Shape::demo();
        seed(&fake, &shape);
        let snapshot = kqueen_core::inventory::collect(&fake.admin_client())
            .await
            .expect("collect");
        assert_eq!(snapshot.nodes.len(), 3);
        assert_eq!(snapshot.nodes.iter().filter(|n| !n.ready).count(), 1);
        assert!(snapshot.metrics && snapshot.nodes.iter().all(|n| n.used.is_some()));
        assert_eq!(snapshot.pods.len(), shape.pods());
        let deployments = snapshot
            .workloads
            .iter()
            .filter(|w| w.kind == kqueen_core::inventory::WorkloadKind::Deployment)
            .count();
        assert_eq!(deployments, 6);
        assert!(snapshot.pods.iter().any(|p| p.host_path));
    }
}
