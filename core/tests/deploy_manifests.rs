//! The Kubernetes manifests in `deploy/kubernetes/` (a Kustomize base and overlays): what the
//! `restricted` Pod Security level asks of the pod, probes on `/healthz` and `/readyz`,
//! several replicas with a disruption budget, a Service and Ingress that reach them,
//! configuration only through settings KQueen reads; the overlays rendered by the real
//! Kustomize (`kubectl kustomize`); and, with a real kube-apiserver
//! (`KQUEEN_TEST_KUBE_APISERVER`), every object of the `kubernetes-1.20` overlay accepted by a
//! server-side dry run.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::time::Duration;

use kqueen_core::workloads::manifest::{parse_manifests, ManifestLimits, ManifestObject};
use serde_json::Value;
use support::apiserver::RealApiServer;

fn read(file: &str) -> String {
    let path = format!("{}/../deploy/kubernetes/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn objects(file: &str) -> Vec<ManifestObject> {
    parse_manifests(&read(file), &ManifestLimits::default()).unwrap()
}

/// The objects `kubectl kustomize` renders of overlay `name`, or `None` (after saying why)
/// without kubectl.
fn overlay(name: &str) -> Option<Vec<ManifestObject>> {
    let dir = format!(
        "{}/../deploy/kubernetes/overlays/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = match std::process::Command::new("kubectl")
        .args(["kustomize", &dir])
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            println!("skipped: kubectl (for kustomize): {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "kubectl kustomize {dir}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    Some(parse_manifests(&text, &ManifestLimits::default()).unwrap())
}

fn find<'a>(objects: &'a [ManifestObject], kind: &str) -> &'a Value {
    &objects
        .iter()
        .find(|o| o.kind == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
        .object
}

#[test]
fn the_pod_is_what_the_restricted_level_admits_with_probes_and_replicas() {
    let all = objects("base/kqueen.yaml");
    let deployment = find(&all, "Deployment");
    assert!(deployment["spec"]["replicas"].as_i64().unwrap() >= 2);
    let pod = &deployment["spec"]["template"]["spec"];
    let ctx = &pod["securityContext"];
    assert_eq!(ctx["runAsNonRoot"], true);
    assert_ne!(ctx["runAsUser"], 0);
    assert_eq!(ctx["seccompProfile"]["type"], "RuntimeDefault");
    assert!(pod["hostNetwork"].is_null() && pod["hostPID"].is_null() && pod["hostIPC"].is_null());
    for v in pod["volumes"].as_array().unwrap() {
        let kinds: Vec<&String> = v
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "name")
            .collect();
        assert!(
            kinds
                .iter()
                .all(|k| ["emptyDir", "configMap", "secret", "projected"].contains(&k.as_str())),
            "{v}"
        );
    }
    let containers = pod["containers"].as_array().unwrap();
    for c in containers {
        let ctx = &c["securityContext"];
        assert_eq!(ctx["allowPrivilegeEscalation"], false, "{c}");
        assert_eq!(
            ctx["capabilities"]["drop"],
            serde_json::json!(["ALL"]),
            "{c}"
        );
        assert!(
            ctx["privileged"].is_null() || ctx["privileged"] == false,
            "{c}"
        );
        assert_eq!(ctx["readOnlyRootFilesystem"], true, "{c}");
        assert!(c["ports"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["hostPort"].is_null()));
    }
    let kqueen = &containers[0];
    assert_eq!(kqueen["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(kqueen["readinessProbe"]["httpGet"]["path"], "/readyz");
    // The Service, the disruption budget and the Ingress reach these pods.
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(find(&all, "Service")["spec"]["selector"], *labels);
    let pdb = find(&all, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["selector"]["matchLabels"], *labels);
    assert!(
        pdb["spec"]["minAvailable"].as_i64().unwrap()
            < deployment["spec"]["replicas"].as_i64().unwrap()
    );
    let port = &find(&all, "Service")["spec"]["ports"][0]["targetPort"];
    assert!(
        kqueen["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == *port),
        "{port}"
    );
    let backend = &find(&all, "Ingress")["spec"]["rules"][0]["http"]["paths"][0]["backend"];
    assert_eq!(
        backend["service"]["name"],
        find(&all, "Service")["metadata"]["name"]
    );
}

/// The Dockerfile, the offline image (the test kit's `kqueen_image`, what the replica test
/// runs) and the Deployment agree: binary, site, data folder, user, listen address.
#[test]
fn the_dockerfile_the_offline_image_and_the_manifests_agree() {
    use kqueen_testkit::node_lab::kqueen_image::{BINARY, DATA, SITE, UID};
    let dockerfile =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../Dockerfile")).unwrap();
    for line in [
        format!("COPY --from=build /out/kqueen {BINARY}"),
        format!("COPY --from=build /out/site {SITE}"),
        format!("ENV KQUEEN_SITE_ROOT={SITE}"),
        format!("KQUEEN_DATA_DIR={DATA}"),
        "KQUEEN_LISTEN=0.0.0.0:3000".to_owned(),
        format!("USER {UID}:{UID}"),
        format!("ENTRYPOINT [\"{BINARY}\"]"),
    ] {
        assert!(dockerfile.contains(&line), "Dockerfile lacks {line}");
    }
    let all = objects("base/kqueen.yaml");
    let pod = &find(&all, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsUser"], UID);
    assert_eq!(pod["securityContext"]["runAsGroup"], UID);
    let config = &find(&all, "ConfigMap")["data"];
    assert_eq!(config["KQUEEN_SITE_ROOT"], SITE);
    assert_eq!(config["KQUEEN_DATA_DIR"], DATA);
    let mounts = pod["containers"][0]["volumeMounts"].as_array().unwrap();
    for path in [DATA, "/tmp"] {
        assert!(mounts.iter().any(|m| m["mountPath"] == path), "{path}");
    }
    // The offline image: the same paths, user and environment, and what the binary links.
    let binary = std::env::current_exe().unwrap();
    let spec = kqueen_testkit::node_lab::kqueen_image::spec("kqueen:test", &binary, None).unwrap();
    assert_eq!(spec.entrypoint, [BINARY]);
    assert_eq!(spec.user, format!("{UID}:{UID}"));
    assert!(spec.files.iter().any(|(_, p)| p == BINARY));
    assert!(spec.env.contains(&format!("KQUEEN_SITE_ROOT={SITE}")));
    assert!(spec.env.contains(&format!("KQUEEN_DATA_DIR={DATA}")));
    assert!(
        spec.files.iter().any(|(_, p)| p.contains("libc.so")),
        "{:?}",
        spec.files
    );
    let passwd = spec
        .data
        .iter()
        .find(|(p, _, _)| p == "/etc/passwd")
        .unwrap();
    assert!(String::from_utf8_lossy(&passwd.1).contains(&format!("kqueen:x:{UID}:{UID}:")));
}

/// The overlays, rendered by the real Kustomize: the production example names its image,
/// namespace, replicas and address; the 1.20 one serves the disruption budget as
/// policy/v1beta1 and changes nothing else.
#[test]
fn overlays_render_with_kustomize() {
    let base = objects("base/kqueen.yaml");
    let Some(production) = overlay("production") else {
        return;
    };
    assert_eq!(production.len(), base.len());
    for o in &production {
        assert_eq!(o.object["metadata"]["namespace"], "kqueen", "{}", o.kind);
    }
    let pod = &find(&production, "Deployment")["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"][0]["image"],
        "registry.example.com/platform/kqueen:0.1.0"
    );
    assert_eq!(find(&production, "Deployment")["spec"]["replicas"], 3);
    assert_eq!(
        find(&production, "ConfigMap")["data"]["KQUEEN_PUBLIC_URL"],
        "https://kqueen.example.com"
    );
    let ingress = &find(&production, "Ingress")["spec"];
    assert_eq!(ingress["rules"][0]["host"], "kqueen.example.com");
    assert_eq!(ingress["tls"][0]["hosts"][0], "kqueen.example.com");

    let old = overlay("kubernetes-1.20").unwrap();
    assert_eq!(old.len(), base.len());
    for o in &old {
        let same = base.iter().find(|b| b.kind == o.kind).unwrap();
        if o.kind == "PodDisruptionBudget" {
            assert_eq!(o.api_version, "policy/v1beta1");
            assert_eq!(o.object["spec"], same.object["spec"]);
        } else {
            assert_eq!(o.object, same.object, "{}", o.kind);
        }
    }
}

/// Every variable the ConfigMap and the example Secret set is a setting KQueen reads (the
/// example configuration names them all), and the Deployment reads both.
#[test]
fn configuration_is_only_settings_kqueen_reads() {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../kqueen.example.toml"
    ))
    .unwrap();
    let known: Vec<String> = example
        .lines()
        .map(|l| l.trim_start_matches('#').trim())
        .filter_map(|l| l.split_once(" = ").map(|(k, _)| k.trim()))
        .filter(|k| k.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .map(|k| format!("KQUEEN_{}", k.to_ascii_uppercase()))
        .collect();
    assert!(known.len() > 20, "{known:?}");
    let all = objects("base/kqueen.yaml");
    let secret = objects("secret.example.yaml");
    let set = find(&all, "ConfigMap")["data"]
        .as_object()
        .unwrap()
        .keys()
        .chain(
            find(&secret, "Secret")["stringData"]
                .as_object()
                .unwrap()
                .keys(),
        );
    for name in set {
        assert!(known.contains(name), "{name} is not a setting");
    }
    let from = &find(&all, "Deployment")["spec"]["template"]["spec"]["containers"][0]["envFrom"];
    assert_eq!(
        from[0]["configMapRef"]["name"],
        find(&all, "ConfigMap")["metadata"]["name"]
    );
    assert_eq!(
        from[1]["secretRef"]["name"],
        find(&secret, "Secret")["metadata"]["name"]
    );
}

/// A real API server v1.20 takes every object of the `kubernetes-1.20` overlay and the
/// example Secret (server-side apply, dry run) in a namespace of the test's.
#[tokio::test]
async fn a_real_api_server_accepts_every_object() {
    let Some(server) = RealApiServer::start().await else {
        return;
    };
    // With the real binaries named, the check must not vanish for want of kubectl.
    let mut all = overlay("kubernetes-1.20")
        .expect("kubectl renders the overlay (scripts/setup.sh test installs it)");
    let client = support::kube_client::client_of(
        server.admin_kubeconfig().as_bytes(),
        Duration::from_secs(10),
    )
    .await;
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(client.clone());
    let ns: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "kqueen"}})).unwrap();
    namespaces
        .create(&kube::api::PostParams::default(), &ns)
        .await
        .unwrap();
    all.extend(objects("secret.example.yaml"));
    let mut tried = 0;
    for o in all {
        let (group, version) = match o.api_version.split_once('/') {
            Some((g, v)) => (g.to_owned(), v.to_owned()),
            None => (String::new(), o.api_version.clone()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &o.kind);
        let Some((resource, _)) = discovery.resolve_gvk(&gvk) else {
            panic!("{} {} is not served", o.api_version, o.kind)
        };
        let mut object = o.object.clone();
        object["metadata"]["namespace"] = Value::String("kqueen".into());
        let api: kube::Api<kube::api::DynamicObject> =
            kube::Api::namespaced_with(client.clone(), "kqueen", &resource);
        let params = kube::api::PatchParams::apply("kqueen-test").dry_run();
        api.patch(&o.name, &params, &kube::api::Patch::Apply(&object))
            .await
            .unwrap_or_else(|e| panic!("{} {}: {e}", o.kind, o.name));
        tried += 1;
    }
    assert_eq!(tried, 7);
}
