//! The fleet exports' CSV: one row type per export, written by serde
//! ([`crate::export::to_csv`]).

use serde::Serialize;

use crate::export::to_csv;
use crate::inventory::fleet::{FindingRow, ImageHistoryRow, ImageRow, VersionRow};
use crate::Result;

fn time(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<String> {
    t.map(|t| t.to_rfc3339())
}

/// `images`: one line per place an image runs.
#[derive(Serialize)]
struct ImageUsageLine<'a> {
    image: &'a str,
    registry: Option<&'a str>,
    repository: Option<&'a str>,
    tag: Option<&'a str>,
    digest: Option<&'a str>,
    tenant: &'a str,
    cluster: &'a str,
    namespace: &'a str,
    workload_kind: &'a str,
    workload: &'a str,
    container: &'a str,
    pods: u32,
    first_seen: Option<String>,
    last_seen: Option<String>,
}

/// The images export (one line per usage).
pub fn images_csv(rows: &[ImageRow]) -> Result<String> {
    let lines = rows.iter().flat_map(|i| {
        i.usages.iter().map(move |u| ImageUsageLine {
            image: &i.image,
            registry: i.registry.as_deref(),
            repository: i.repository.as_deref(),
            tag: i.tag.as_deref(),
            digest: i.digest.as_deref(),
            tenant: &u.tenant,
            cluster: &u.cluster,
            namespace: &u.namespace,
            workload_kind: &u.workload_kind,
            workload: &u.workload_name,
            container: &u.container,
            pods: u.pods,
            first_seen: time(u.first_seen),
            last_seen: time(u.last_seen),
        })
    });
    to_csv(
        &[
            "image",
            "registry",
            "repository",
            "tag",
            "digest",
            "tenant",
            "cluster",
            "namespace",
            "workload_kind",
            "workload",
            "container",
            "pods",
            "first_seen",
            "last_seen",
        ],
        lines,
    )
}

#[derive(Serialize)]
struct HistoryLine<'a> {
    tenant: &'a str,
    cluster: &'a str,
    image: &'a str,
    digest: Option<&'a str>,
    first_seen: String,
    last_seen: String,
    present: bool,
}

/// The image history export.
pub fn history_csv(rows: &[ImageHistoryRow]) -> Result<String> {
    let lines = rows.iter().map(|h| HistoryLine {
        tenant: &h.tenant,
        cluster: &h.cluster,
        image: &h.image,
        digest: h.digest.as_deref(),
        first_seen: h.first_seen.to_rfc3339(),
        last_seen: h.last_seen.to_rfc3339(),
        present: h.present,
    });
    to_csv(
        &[
            "tenant",
            "cluster",
            "image",
            "digest",
            "first_seen",
            "last_seen",
            "present",
        ],
        lines,
    )
}

#[derive(Serialize)]
struct VersionLine<'a> {
    tenant: &'a str,
    cluster: &'a str,
    api_version: Option<&'a str>,
    synced_at: Option<String>,
    node: Option<&'a str>,
    kubelet_version: Option<&'a str>,
    container_runtime: Option<&'a str>,
    os_image: Option<&'a str>,
    kernel_version: Option<&'a str>,
    ready: Option<bool>,
}

/// The Kubernetes versions export (one line per node).
pub fn versions_csv(rows: &[VersionRow]) -> Result<String> {
    let lines = rows.iter().map(|v| VersionLine {
        tenant: &v.tenant,
        cluster: &v.cluster,
        api_version: v.api_version.as_deref(),
        synced_at: time(v.synced_at),
        node: v.node.as_deref(),
        kubelet_version: v.kubelet_version.as_deref(),
        container_runtime: v.container_runtime.as_deref(),
        os_image: v.os_image.as_deref(),
        kernel_version: v.kernel_version.as_deref(),
        ready: v.ready,
    });
    to_csv(
        &[
            "tenant",
            "cluster",
            "api_version",
            "synced_at",
            "node",
            "kubelet_version",
            "container_runtime",
            "os_image",
            "kernel_version",
            "ready",
        ],
        lines,
    )
}

#[derive(Serialize)]
struct FindingLine<'a> {
    severity: &'a str,
    check: &'a str,
    tenant: &'a str,
    cluster: &'a str,
    subject: &'a str,
    message: &'a str,
}

/// The findings export.
pub fn findings_csv(rows: &[FindingRow]) -> Result<String> {
    let lines = rows.iter().map(|r| FindingLine {
        severity: r.finding.severity.as_str(),
        check: &r.finding.check,
        tenant: &r.tenant,
        cluster: &r.cluster,
        subject: &r.finding.subject,
        message: &r.finding.message,
    });
    to_csv(
        &[
            "severity", "check", "tenant", "cluster", "subject", "message",
        ],
        lines,
    )
}
