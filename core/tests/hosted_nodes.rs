//! Real nodes under a hosted cluster: an operator offers a hosted provider, a member requests
//! a cluster, and a real node (the test kit's node lab: containerd, the CNI bridge, a kubelet
//! v1.20) joins it with the exact `kubeadm join` line KQueen shows. The kubelet bootstraps
//! (its certificate request approved by the hosted control plane), the node becomes Ready,
//! the hosted kube-scheduler places a Deployment's pods and they run; `kubectl logs` and
//! `exec` go through the hosted API server to the kubelet; an application deployed through
//! KQueen rolls out by itself, and a version whose image cannot be pulled says so; an addon
//! whose workload runs becomes Healthy by itself; the inventory shows the node, its
//! capacity and the pod's image with its digest; a stopped kubelet makes the node NotReady,
//! with the time it went; an operator has it replaced through KQueen (a `command` provider
//! whose replace command asks the test, the lab's "cloud", for a new machine: the Node is
//! removed, the kubelet starts again and registers a new Node), and the inventory is clear
//! again; a revoked token joins nothing more.
//!
//! Needs the binaries of `../shared/kube` (`KQUEEN_TEST_KUBE_*`, `KQUEEN_TEST_KUBEADM`,
//! `KQUEEN_TEST_KUBELET`) and containers (root, containerd, runc, the CNI plugins); skips
//! with the reason otherwise.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kqueen_core::cluster::ClusterState;
use kqueen_core::inventory::fleet::FleetFilter;
use kqueen_core::page::Page;

use kqueen_core::workloads::addons::state::AddonState;
use kqueen_core::workloads::addons::{AddonDefinition, HealthRule, WellKnown};
use kqueen_core::workloads::status::Rollout;
use kqueen_core::DeployRequest;
use kqueen_testkit::hosted::HostedKqueen;
use kqueen_testkit::node_lab::cluster::{join_until_ready, node_ready, Binaries};
use kqueen_testkit::node_lab::{NodeLab, BUSYBOX_IMAGE, NODE_NAME};
use kqueen_testkit::tls_etcd::TlsEtcd;
use kqueen_testkit::wait::within;
use kube::api::{Api, PostParams};
use support::converge::converge;
use support::kube_client::client_of;

fn kubectl(kubeconfig: &std::path::Path, args: &[&str]) -> Result<String, String> {
    let out = std::process::Command::new("timeout")
        .args(["60", "kubectl", "--request-timeout=30s"])
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args(args)
        .output()
        .map_err(|e| format!("kubectl: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn web(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  \
         selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        \
         app: web\n    spec:\n      containers:\n      - name: web\n        image: {image}\n        \
         imagePullPolicy: IfNotPresent\n        command: [/bin/busybox, sh, -c, 'echo hello-from-a-real-pod; \
         exec /bin/busybox httpd -f -p 8080']\n"
    )
}

#[tokio::test]
async fn a_real_node_joins_a_hosted_cluster_with_kubeadm_and_runs_its_pods() {
    let Some(binaries) = Binaries::or_skip() else {
        return;
    };
    let Some(lab) = NodeLab::start().await else {
        return;
    };
    let h = HostedKqueen::start(TlsEtcd::start().await, "team-a=team-a:member").await;
    let (k, ops) = (&h.k, &h.ops);
    let alice = h.person("alice", "team-a").await;
    let process_versions = binaries.process_versions();
    h.offer("shared", &[("versions", &process_versions)], ("hosted", ""))
        .await;
    let id = h.request(&alice, ("team-a", "nodes", "hosted"), None).await;
    let _processes = h.processes_of(&id);
    let engine = k.engine(h.engine_config());
    converge(k, &engine, &id, Some(ClusterState::Ready)).await;
    let admin_yaml = h.admin_kubeconfig(&id).await;
    let admin = client_of(admin_yaml.as_bytes(), Duration::from_secs(10)).await;
    let kubeconfig = h.work.path().join("admin.kubeconfig");
    kqueen_testkit::process::write_private(kubeconfig.to_str().unwrap(), &admin_yaml).unwrap();

    // The member's join line, run as they would run it on their machine.
    let join = k.clusters().join_info(&alice, &id).await.unwrap();
    let joined = join_until_ready(&lab, &join.command, &admin, Duration::from_secs(240))
        .await
        .unwrap();
    assert!(
        joined
            .join
            .output
            .contains("This node has joined the cluster"),
        "{}",
        joined.join.output
    );
    let nodes: Api<Node> = Api::all(admin.clone());
    let node = nodes.get(NODE_NAME).await.unwrap();
    // Its client certificate came from a request the control plane approved.
    let csrs: Api<k8s_openapi::api::certificates::v1::CertificateSigningRequest> =
        Api::all(admin.clone());
    let approved = csrs.list(&Default::default()).await.unwrap().items;
    assert!(
        approved.iter().any(|c| {
            c.spec.username.as_deref() == Some(&format!("system:bootstrap:{}", join.token_id))
                && c.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|c| c.iter().any(|c| c.type_ == "Approved"))
        }),
        "{approved:?}"
    );
    let info = node.status.unwrap().node_info.unwrap();
    assert_eq!(info.kubelet_version, "v1.20.2");
    assert!(info.container_runtime_version.starts_with("containerd://"));

    // A Deployment of 10 pods: placed by the hosted scheduler, run by the node.
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), "default");
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 10,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{
                    "name": "web", "image": BUSYBOX_IMAGE, "imagePullPolicy": "Never",
                    "command": ["/bin/busybox", "sh", "-c",
                                "echo hello-from-a-real-pod; exec /bin/busybox httpd -f -p 8080"],
                }]},
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    within(Duration::from_secs(180), "10 pods available", || async {
        let d = deployments.get("web").await.map_err(|e| e.to_string())?;
        let available = d.status.and_then(|s| s.available_replicas).unwrap_or(0);
        (available == 10)
            .then_some(())
            .ok_or(format!("{available} available"))
    })
    .await;

    // kubectl logs and exec reach the kubelet through the hosted API server.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let pod = pods.list(&Default::default()).await.unwrap().items[0]
        .metadata
        .name
        .clone()
        .unwrap();
    let logs = kubectl(&kubeconfig, &["logs", "-n", "default", &pod]).unwrap();
    assert!(logs.contains("hello-from-a-real-pod"), "{logs}");
    let hostname = kubectl(
        &kubeconfig,
        &[
            "exec",
            "-n",
            "default",
            &pod,
            "--",
            "/bin/busybox",
            "cat",
            "/etc/hostname",
        ],
    )
    .unwrap();
    assert_eq!(hostname.trim(), pod);
    deployments
        .delete("web", &Default::default())
        .await
        .unwrap();

    // An application deployed through KQueen rolls out by itself.
    let deploy = |version: &str, image: &str| DeployRequest {
        name: "shop".into(),
        version: version.into(),
        namespace: None,
        manifests: web(2, image),
    };
    let (app, _) = k
        .apps()
        .deploy(&alice, &id, &deploy("1", BUSYBOX_IMAGE))
        .await
        .unwrap();
    engine.run_until_idle().await.unwrap();
    let app_id = app.id.to_string();
    within(
        Duration::from_secs(120),
        "application Available",
        || async {
            let s = k
                .apps()
                .status(&alice, &id, &app_id)
                .await
                .map_err(|e| e.to_string())?;
            let status = s.status.ok_or(format!("{:?}", s.unreachable))?;
            (!status.workloads.is_empty() && status.all_available())
                .then_some(())
                .ok_or(format!("{:?}", status.workloads))
        },
    )
    .await;
    // A version whose image nobody can pull (a registry port on loopback that is closed).
    let (bad, _) = k
        .apps()
        .deploy(&alice, &id, &deploy("2", "127.0.0.1:1/nothing:1"))
        .await
        .unwrap();
    engine.run_until_idle().await.unwrap();
    let bad_id = bad.id.to_string();
    let failing = within(
        Duration::from_secs(120),
        "ErrImagePull reported",
        || async {
            let s = k
                .apps()
                .status(&alice, &id, &bad_id)
                .await
                .map_err(|e| e.to_string())?;
            let status = s.status.ok_or(format!("{:?}", s.unreachable))?;
            let rollout = status.workloads.first().map(|w| w.rollout);
            match status.failing_pods.first() {
                Some(p)
                    if ["ErrImagePull", "ImagePullBackOff"]
                        .iter()
                        .any(|r| p.reason.contains(r)) =>
                {
                    Ok((p.clone(), rollout))
                }
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;
    assert!(failing.0.name.starts_with("web-"), "{failing:?}");
    assert_ne!(failing.1, Some(Rollout::Available), "{failing:?}");

    // An addon whose workload runs on the node becomes Healthy by itself.
    let pulse = AddonDefinition {
        name: "pulse".into(),
        version: "1.0.0".into(),
        description: "A busybox web server on every cluster".into(),
        namespace: "pulse-system".into(),
        parameters: vec![],
        health: HealthRule {
            workloads: vec![WellKnown {
                kind: "Deployment".into(),
                namespace: "pulse-system".into(),
                name: "pulse".into(),
            }],
            api_services: vec![],
        },
        requires: vec![],
        detect: vec![],
        manifests: format!(
            "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: pulse-system\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: pulse\n  \
             namespace: pulse-system\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      \
             app: pulse\n  template:\n    metadata:\n      labels:\n        app: pulse\n    \
             spec:\n      containers:\n      - name: pulse\n        image: {BUSYBOX_IMAGE}\n        \
             imagePullPolicy: Never\n        command: [/bin/busybox, httpd, -f, -p, '8080']\n"
        ),
        builtin: false,
    };
    k.addons().define(ops, pulse).await.unwrap();
    k.addons()
        .install(ops, &id, "pulse", None, &Default::default())
        .await
        .unwrap();
    engine.run_until_idle().await.unwrap();
    within(Duration::from_secs(120), "addon Healthy", || async {
        let views = k
            .addons()
            .for_cluster(&alice, &id)
            .await
            .map_err(|e| e.to_string())?;
        let pulse = views
            .into_iter()
            .find(|a| a.name == "pulse")
            .ok_or("no pulse")?;
        (pulse.state == AddonState::Healthy)
            .then_some(())
            .ok_or(format!("{:?} {:?}", pulse.state, pulse.reason))
    })
    .await;

    // The inventory: the node with its capacity, the pod's image with its digest.
    let synced = k.fleet().sync_cluster_inventory(ops, &id).await.unwrap();
    assert!(synced.error.is_none(), "{synced:?}");
    let inventory = k.fleet().cluster_inventory(&alice, &id).await.unwrap();
    let node = inventory
        .nodes
        .iter()
        .find(|n| n.name == NODE_NAME)
        .unwrap_or_else(|| panic!("{:?}", inventory.nodes));
    assert!(node.ready && node.capacity.cpu_millis >= 1000, "{node:?}");
    assert!(node.capacity.memory_bytes > 1 << 30, "{node:?}");
    assert!(node.container_runtime.starts_with("containerd"), "{node:?}");
    let (images, _) = k
        .fleet()
        .fleet_images(&alice, &FleetFilter::default(), Page::default())
        .await
        .unwrap();
    let busybox = images
        .iter()
        .find(|i| i.repository.as_deref() == Some("busybox"))
        .unwrap_or_else(|| panic!("{images:?}"));
    assert_eq!(busybox.registry.as_deref(), Some("kqueen.local"));
    assert_eq!(
        busybox.digest.as_deref(),
        Some(lab.busybox_digest()),
        "{busybox:?}"
    );
    assert!(
        busybox.usages.iter().any(|u| u.cluster == "nodes"),
        "{busybox:?}"
    );

    // The kubelet dies: the node goes NotReady (after the controller manager's grace
    // period); the cluster's inventory and the fleet dashboard say since when; back, cleared.
    lab.stop_kubelet().await;
    within(Duration::from_secs(150), "node NotReady", || async {
        match nodes.get(NODE_NAME).await {
            Ok(n) if !node_ready(&n) => Ok(()),
            other => Err(format!("{:?}", other.map(|n| n.status))),
        }
    })
    .await;
    let flagged = || {
        let k = &k;
        let (ops, id) = (&ops, &id);
        async move {
            let synced = k.fleet().sync_cluster_inventory(ops, id).await.unwrap();
            assert!(synced.error.is_none(), "{synced:?}");
            let inventory = k.fleet().cluster_inventory(ops, id).await.unwrap();
            let node = inventory
                .nodes
                .into_iter()
                .find(|n| n.name == NODE_NAME)
                .unwrap();
            let overview = k
                .fleet()
                .fleet_overview(ops, &FleetFilter::default(), false, Page::default())
                .await
                .unwrap();
            let reasons: Vec<String> = overview
                .attention
                .iter()
                .filter(|a| a.cluster.id.to_string() == *id)
                .flat_map(|a| a.reasons.clone())
                .collect();
            (node, reasons)
        }
    };
    let (node, reasons) = flagged().await;
    assert!(!node.ready, "{node:?}");
    let since = node.not_ready_since.expect("the time it went");
    assert!(
        chrono::Utc::now() - since < chrono::Duration::minutes(5),
        "{since}"
    );
    let expected = format!(
        "1 of 1 nodes not Ready since {}",
        since.format("%Y-%m-%d %H:%M UTC")
    );
    assert!(reasons.contains(&expected), "{reasons:?}");
    replace_the_dead_node(&h, &lab, &kubeconfig, &engine).await;
    let (node, reasons) = flagged().await;
    assert!(node.ready && node.not_ready_since.is_none(), "{node:?}");
    assert!(
        !reasons.iter().any(|r| r.contains("not Ready")),
        "{reasons:?}"
    );

    // The token revoked: the same line joins nothing.
    assert!(k
        .clusters()
        .revoke_join_token(&alice, &id, &join.token_id)
        .await
        .unwrap());
    // kubeadm retries discovery until its own timeout (5 min): 30 s tell.
    let refused = lab
        .kubeadm_join(&join.command, Duration::from_secs(30))
        .await
        .unwrap_err();
    // kubeadm finds no signature for the token's id in cluster-info (and, when its own
    // timeout is reached, says the token is invalid).
    let unsigned = format!("JWS signature for token ID \"{}\"", join.token_id);
    let invalid = format!("token id \"{}\" is invalid", join.token_id);
    assert!(
        refused.contains(&unsigned) || refused.contains(&invalid),
        "{refused}"
    );
    assert!(!refused.contains("This node has joined"), "{refused}");
}

/// The lab's dead node replaced through KQueen. The machine is an installer's: a `command`
/// provider whose create command hands over this control plane's admin kubeconfig
/// (`kubeconfig`) and whose replace command asks the test for a new machine (a file), then
/// waits for the answer (another file, at most 120 s). A member may not; an operator asks;
/// the engine removes the Node, the test starts the kubelet again (the new machine), which
/// registers a new Node that becomes Ready, and the operation ends with the cluster Ready.
async fn replace_the_dead_node(
    h: &HostedKqueen,
    lab: &NodeLab,
    kubeconfig: &std::path::Path,
    engine: &kqueen_core::engine::Engine,
) {
    let k = &h.k;
    let cloud = h.work.path().join("cloud");
    std::fs::create_dir_all(&cloud).unwrap();
    let (asked, answered) = (cloud.join("asked"), cloud.join("answered"));
    let replace = format!(
        "echo \"$KQ_ACTION $KQ_NODE_NAME\" > '{}'; i=0; while [ ! -f '{done}' ] && [ $i -lt 1200 ]; \
         do sleep 0.1; i=$((i+1)); done; test -f '{done}'",
        asked.display(),
        done = answered.display()
    );
    let create = format!("cp '{}' \"$KQ_KUBECONFIG\"", kubeconfig.display());
    kqueen_testkit::catalog::offer(
        k,
        &h.ops,
        (
            "command",
            "installer",
            &[
                ("create_command", &create),
                ("replace_command", &replace),
                ("shell", "true"),
            ],
        ),
        ("installer", ""),
    )
    .await;
    let alice = h.person("alice", "team-a").await;
    let id = h
        .request(&alice, ("team-a", "installed", "installer"), None)
        .await;
    converge(k, engine, &id, Some(ClusterState::Ready)).await;
    let nodes: Api<Node> =
        Api::all(client_of(&std::fs::read(kubeconfig).unwrap(), Duration::from_secs(10)).await);
    let dead = nodes.get(NODE_NAME).await.unwrap();
    assert!(!node_ready(&dead));
    assert!(matches!(
        k.clusters().replace_node(&alice, &id, NODE_NAME).await,
        Err(kqueen_core::Error::Forbidden)
    ));
    let detail = k.clusters().cluster_detail(&h.ops, &id).await.unwrap();
    assert!(detail.capabilities.replace_node);
    k.clusters()
        .replace_node(&h.ops, &id, NODE_NAME)
        .await
        .unwrap();
    let dead_uid = dead.metadata.uid.clone().unwrap();
    let the_cloud = async {
        within(Duration::from_secs(90), "the installer asks", || async {
            std::fs::read_to_string(&asked).map_err(|e| e.to_string())
        })
        .await;
        // The Node was removed before the installer was asked.
        assert!(nodes.get_opt(NODE_NAME).await.unwrap().is_none());
        lab.restart_kubelet().await;
        within(Duration::from_secs(90), "the new node Ready", || async {
            match nodes.get(NODE_NAME).await {
                Ok(n) if node_ready(&n) && n.metadata.uid.as_deref() != Some(&dead_uid) => Ok(()),
                other => Err(format!("{:?}", other.map(|n| (n.metadata.uid, n.status)))),
            }
        })
        .await;
        std::fs::write(&answered, "").unwrap();
    };
    tokio::join!(
        converge(k, engine, &id, Some(ClusterState::Ready)),
        the_cloud
    );
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap().trim(),
        format!("replace-node {NODE_NAME}")
    );
    let events: Vec<String> = k
        .clusters()
        .cluster_events(&h.ops, &id, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.message)
        .collect();
    for line in [
        format!("Removing node {NODE_NAME} from the cluster"),
        format!("Ready: node {NODE_NAME} replaced"),
    ] {
        assert!(events.contains(&line), "no '{line}' in {events:#?}");
    }
    assert!(
        events
            .iter()
            .any(|e| e.starts_with(&format!("removed node {NODE_NAME} (not Ready since "))),
        "{events:#?}"
    );
}
