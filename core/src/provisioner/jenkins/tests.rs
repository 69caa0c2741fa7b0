//! Unit tests of the Jenkins provisioner's pure parts.

use std::time::{SystemTime, UNIX_EPOCH};

use reqwest::header::{HeaderMap, HeaderValue, LOCATION};

use super::*;

fn config(pairs: &[(&str, &str)]) -> Params {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn urls_of_folders_builds_and_artifacts() {
    let base = parse_base_url("https://ci.example.com/jenkins").expect("url");
    let job = JobPath::parse("/team a/clusters/create/").expect("job");
    assert_eq!(
        job.url(&base, &["buildWithParameters"]).as_str(),
        "https://ci.example.com/jenkins/job/team%20a/job/clusters/job/create/buildWithParameters"
    );
    let build = job.url(&base, &["7", ""]);
    assert_eq!(
        build.as_str(),
        "https://ci.example.com/jenkins/job/team%20a/job/clusters/job/create/7/"
    );
    assert_eq!(
        endpoint(&build, ["artifact", "out", "admin.conf"]).as_str(),
        "https://ci.example.com/jenkins/job/team%20a/job/clusters/job/create/7/artifact/out/admin.conf"
    );
}

#[test]
fn settings_are_checked() {
    let ok = config(&[
        ("url", "http://jenkins:8080/"),
        ("job", "create"),
        ("username", "kq"),
    ]);
    let s = Settings::parse(&ok).expect("valid");
    assert_eq!(s.artifact, vec!["kubeconfig".to_owned()]);
    assert_eq!(s.poll, Duration::from_secs(5));
    let err = |extra: &[(&str, &str)]| {
        let mut c = ok.clone();
        c.extend(config(extra));
        Settings::parse(&c).err().unwrap_or_default()
    };
    assert!(err(&[("url", "ftp://x/")]).starts_with("url:"));
    assert!(err(&[("url", "jenkins:8080")]).starts_with("url:"));
    assert!(err(&[("url", "https://u:p@ci/")]).contains("credentials"));
    assert!(!err(&[("url", "https://u:p@ci/")]).contains("u:p"));
    assert!(err(&[("job", "a/../b")]).starts_with("job:"));
    assert!(err(&[("job", "a//b")]).starts_with("job:"));
    assert!(err(&[("kubeconfig_artifact", "/etc/passwd")]).starts_with("kubeconfig_artifact:"));
    assert!(err(&[("kubeconfig_artifact", "../x")]).starts_with("kubeconfig_artifact:"));
    assert!(err(&[("poll_seconds", "0")]).starts_with("poll_seconds:"));
    assert!(err(&[("poll_seconds", "301")]).starts_with("poll_seconds:"));
    assert!(err(&[("ca_cert", "not a certificate")]).starts_with("ca_cert:"));
}

#[test]
fn console_lines_wait_for_their_end() {
    let mut tail = Vec::new();
    assert_eq!(take_lines(&mut tail, b"one\r\ntw"), vec!["one"]);
    // A UTF-8 character cut between two reads survives.
    let check = "✓".as_bytes();
    let mut chunk = b"o ".to_vec();
    chunk.extend_from_slice(&check[..1]);
    assert!(take_lines(&mut tail, &chunk).is_empty());
    let mut chunk = check[1..].to_vec();
    chunk.extend_from_slice(b"\nthree\n\nfour");
    assert_eq!(take_lines(&mut tail, &chunk), vec!["two ✓", "three", ""]);
    assert_eq!(tail, b"four");
    let long = vec![b'x'; MAX_LINE_BYTES + 1];
    assert_eq!(take_lines(&mut tail, &long).len(), 1);
    assert!(tail.is_empty());
}

#[test]
fn queue_ids_from_locations() {
    let mut h = HeaderMap::new();
    h.insert(
        LOCATION,
        HeaderValue::from_static("https://ci/queue/item/42/"),
    );
    assert_eq!(queue_id(&h), Some(42));
    h.insert(LOCATION, HeaderValue::from_static("/jenkins/queue/item/7"));
    assert_eq!(queue_id(&h), Some(7));
    h.insert(LOCATION, HeaderValue::from_static("https://ci/job/x/"));
    assert_eq!(queue_id(&h), None);
}

#[test]
fn progress_is_capped_until_the_end() {
    let now = i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("ms");
    let build = |started_ago: i64, estimate: i64| BuildJson {
        building: true,
        result: None,
        timestamp: now - started_ago,
        estimated_duration: estimate,
    };
    let half = build(50_000, 100_000).progress().expect("estimate");
    assert!((45..=55).contains(&half), "{half}");
    assert_eq!(build(500_000, 100_000).progress(), Some(95));
    assert_eq!(build(1_000, -1).progress(), None);
}

#[test]
fn kubeconfig_endpoint_and_no_leaks() {
    let kc = b"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://10.0.0.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: s3cr3t\n";
    assert_eq!(
        kubeconfig_endpoint(kc, "it").expect("valid").as_deref(),
        Some("https://10.0.0.1:6443")
    );
    for bad in [&b""[..], b"  \n", b"token: s3cr3t: [", b"just: s3cr3t\n"] {
        let err = kubeconfig_endpoint(bad, "it")
            .expect_err("invalid")
            .to_string();
        assert!(!err.contains("s3cr3t"), "{err}");
    }
}
