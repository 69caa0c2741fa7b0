//! A hosted control plane's PKI, read back with an independent X.509 parser: every
//! certificate verifies against its CA, names (SANs, CN, O) and key usages are what
//! kube-apiserver and its clients check, and the admin kubeconfig parses.
#![allow(clippy::unwrap_used)]

use kqueen_core::hosted::pki::{self, Authority, CertKey, PkiRequest};
use x509_parser::extensions::GeneralName;
use x509_parser::pem::parse_x509_pem;

fn der(pem: &str) -> Vec<u8> {
    let (_, pem) = parse_x509_pem(pem.as_bytes()).unwrap();
    pem.contents
}

/// Checks that `leaf` is signed by `ca` and returns (CN, O, SANs, server auth, client auth).
fn read(leaf: &CertKey, ca: &CertKey) -> (String, Vec<String>, Vec<String>, bool, bool) {
    let (leaf_der, ca_der) = (der(&leaf.cert_pem), der(&ca.cert_pem));
    let (_, cert) = x509_parser::parse_x509_certificate(&leaf_der).unwrap();
    let (_, ca_cert) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    cert.verify_signature(Some(ca_cert.public_key())).unwrap();
    assert_eq!(cert.issuer(), ca_cert.subject());
    assert!(!cert.is_ca());
    assert!(cert.validity().is_valid());
    let cn = cert
        .subject()
        .iter_common_name()
        .next()
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned();
    let orgs = cert
        .subject()
        .iter_organization()
        .map(|o| o.as_str().unwrap().to_owned())
        .collect();
    let sans =
        cert.subject_alternative_name()
            .unwrap()
            .map(|s| {
                s.value
                    .general_names
                    .iter()
                    .map(|n| match n {
                        GeneralName::DNSName(d) => (*d).to_owned(),
                        GeneralName::IPAddress(ip) => match ip.len() {
                            4 => std::net::Ipv4Addr::from(<[u8; 4]>::try_from(*ip).unwrap())
                                .to_string(),
                            _ => format!("{ip:?}"),
                        },
                        other => format!("{other:?}"),
                    })
                    .collect()
            })
            .unwrap_or_default();
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    let usage = cert.key_usage().unwrap().unwrap().value;
    assert!(usage.digital_signature() && !usage.key_cert_sign());
    (cn, orgs, sans, eku.server_auth, eku.client_auth)
}

fn assert_ca(ca: &CertKey, days: i64) {
    let ca_der = der(&ca.cert_pem);
    let (_, cert) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    assert!(cert.is_ca());
    cert.verify_signature(None).unwrap();
    assert!(cert.key_usage().unwrap().unwrap().value.key_cert_sign());
    let lasts = cert.validity().not_after.timestamp() - cert.validity().not_before.timestamp();
    assert_eq!(
        lasts,
        (days + 1) * 86_400,
        "from yesterday to `days` days from now"
    );
}

#[test]
fn a_control_plane_pki_is_what_kubernetes_checks() {
    let req = PkiRequest::new(
        "dev",
        vec!["127.0.0.1".into(), "dev.team-a.kqueen.example".into()],
    );
    let p = pki::generate(&req).unwrap();
    assert_ca(&p.ca, 3650);
    assert_ca(&p.front_proxy_ca, 3650);

    let (cn, _, sans, server, client) = read(&p.apiserver, &p.ca);
    assert_eq!(cn, "kube-apiserver");
    assert!(server && !client);
    for name in [
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "10.96.0.1",
        "127.0.0.1",
        "dev.team-a.kqueen.example",
    ] {
        assert!(sans.contains(&name.to_owned()), "{name} in {sans:?}");
    }
    let clients = [
        (&p.admin, &p.ca, "kqueen-admin", vec!["system:masters"]),
        (
            &p.apiserver_kubelet_client,
            &p.ca,
            "kube-apiserver-kubelet-client",
            vec!["system:masters"],
        ),
        (
            &p.controller_manager,
            &p.ca,
            "system:kube-controller-manager",
            vec![],
        ),
        (&p.scheduler, &p.ca, "system:kube-scheduler", vec![]),
        (
            &p.front_proxy_client,
            &p.front_proxy_ca,
            "front-proxy-client",
            vec![],
        ),
    ];
    for (leaf, ca, want_cn, want_orgs) in clients {
        let (cn, orgs, sans, server, client) = read(leaf, ca);
        assert_eq!(cn, want_cn);
        assert_eq!(orgs, want_orgs, "{cn}");
        assert!(client && !server && sans.is_empty(), "{cn}");
    }
    // A certificate signed by another CA does not verify against this one.
    let other = pki::generate(&req).unwrap();
    let (other_der, ca_der) = (der(&other.admin.cert_pem), der(&p.ca.cert_pem));
    let (_, foreign) = x509_parser::parse_x509_certificate(&other_der).unwrap();
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    assert!(foreign.verify_signature(Some(ca.public_key())).is_err());

    // The service-account key pair is a pair.
    let key = std::str::from_utf8(p.service_account_key.expose()).unwrap();
    assert!(key.contains("PRIVATE KEY"));
    assert!(p.service_account_pub.contains("PUBLIC KEY"));
    assert_eq!(
        rcgen_public(key),
        p.service_account_pub,
        "the public key belongs to the private one"
    );

    // Sealed as one secret and read back whole.
    let back = pki::ControlPlanePki::from_secret(&p.to_secret()).unwrap();
    assert_eq!(back.admin.cert_pem, p.admin.cert_pem);
    assert_eq!(back.ca.key_pem, p.ca.key_pem);
    assert_eq!(back.service_account_pub, p.service_account_pub);
    assert_eq!(back.scheduler.cert_pem, p.scheduler.cert_pem);
    // A PKI sealed before control planes ran kube-scheduler gets its certificate from the CA.
    let mut bundle: serde_json::Value = serde_json::from_slice(p.to_secret().expose()).unwrap();
    bundle["pairs"]
        .as_object_mut()
        .unwrap()
        .remove("scheduler")
        .unwrap();
    let older = kqueen_core::vault::Secret::new(serde_json::to_vec(&bundle).unwrap());
    let back = pki::ControlPlanePki::from_secret(&older).unwrap();
    let (cn, orgs, _, server, client) = read(&back.scheduler, &p.ca);
    assert_eq!((cn.as_str(), orgs.len()), ("system:kube-scheduler", 0));
    assert!(client && !server);
    let garbage = kqueen_core::vault::Secret::new(b"{}".to_vec());
    assert!(pki::ControlPlanePki::from_secret(&garbage).is_err());

    // Keys never show in Debug output.
    let debug = format!("{p:?}");
    assert!(!debug.contains("PRIVATE KEY"), "{debug}");

    // The admin kubeconfig parses, names the endpoint and carries the client certificate.
    let yaml = pki::kubeconfig("dev", "https://127.0.0.1:6443", &p.ca.cert_pem, &p.admin);
    let text = std::str::from_utf8(yaml.expose()).unwrap();
    let parsed = kqueen_core::kubernetes::parse_kubeconfig(text, None, false).unwrap();
    let endpoint = parsed.endpoint();
    assert_eq!(endpoint.server, "https://127.0.0.1:6443");
    assert!(endpoint.ca_data.is_some() && !endpoint.insecure_skip_tls_verify);
}

fn rcgen_public(private_pem: &str) -> String {
    // The same crate read it back: the public half derived from the private PEM.
    kqueen_core::hosted::pki::public_key_of(private_pem).unwrap()
}

#[test]
fn the_shared_etcds_client_ca_signs_a_control_planes_etcd_certificate() {
    let etcd_ca = Authority::generate("etcd client CA", 365).unwrap();
    let pem = etcd_ca.cert_key();
    let key = std::str::from_utf8(pem.key_pem.expose()).unwrap();
    let loaded = Authority::from_pem(&pem.cert_pem, key).unwrap();
    let cert = loaded.client("kqueen-hosted-c1", None, 365).unwrap();
    let (cn, orgs, _, server, client) = read(&cert, pem);
    assert_eq!(cn, "kqueen-hosted-c1");
    assert!(orgs.is_empty() && client && !server);
    // Garbage is refused with a message that does not repeat it.
    for (c, k) in [("nope", key), (pem.cert_pem.as_str(), "secret-garbage")] {
        let e = Authority::from_pem(c, k).err().unwrap().to_string();
        assert!(!e.contains("secret-garbage") && e.contains("PEM"), "{e}");
    }
    // Names that cannot be SANs are refused.
    assert!(etcd_ca.server("x", &["bad name!".into()], 1).is_err());
    assert!(pki::generate(&PkiRequest::new("dev", vec![])).is_err());
}
