//! A backup's archive: a gzipped tar a person can read with `tar xzf`, one YAML file per
//! object at `<namespace>/<group>/<kind>/<name>.yaml` (`_cluster` for cluster-scoped objects,
//! `core` for the core group), and `backup.yaml`, the summary.

use std::io::Read;

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde_json::Value;

use super::BackupSummary;

/// The summary's file name in an archive.
pub const SUMMARY_FILE: &str = "backup.yaml";
/// The folder of cluster-scoped objects.
pub const CLUSTER_SCOPED: &str = "_cluster";
/// The largest archive content KQueen writes or reads (before compression).
pub const MAX_CONTENT_BYTES: usize = 256 << 20;

/// A path segment from a name the API server accepted: they never hold `/`, but an archive
/// read back may come from anywhere, so `/`, `\` and a leading `.` are escaped.
fn segment(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for (i, c) in raw.chars().enumerate() {
        match c {
            '/' => out.push_str("%2F"),
            '\\' => out.push_str("%5C"),
            '%' => out.push_str("%25"),
            '.' if i == 0 => out.push_str("%2E"),
            c => out.push(c),
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// Where `object` (a cleaned object with apiVersion, kind and metadata) lives in an archive.
pub fn path_of(object: &Value) -> String {
    let get = |path: &[&str]| super::field(object, path).unwrap_or_default();
    let api_version = get(&["apiVersion"]);
    let group = match api_version.rsplit_once('/') {
        Some((group, _)) => group,
        None => "core",
    };
    let namespace = match get(&["metadata", "namespace"]) {
        "" => CLUSTER_SCOPED,
        ns => ns,
    };
    format!(
        "{}/{}/{}/{}.yaml",
        segment(namespace),
        segment(group),
        segment(get(&["kind"])),
        segment(get(&["metadata", "name"]))
    )
}

/// Archive errors: what went wrong, for the operation's timeline.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("the backup is larger than {} MiB", MAX_CONTENT_BYTES >> 20)]
    TooLarge,
    #[error("cannot write the archive: {0}")]
    Write(String),
    #[error("not a KQueen backup archive: {0}")]
    Unreadable(String),
}

fn yaml(value: &impl serde::Serialize) -> Result<String, ArchiveError> {
    serde_saphyr::to_string(value).map_err(|e| ArchiveError::Write(e.to_string()))
}

/// The archive of `objects` (cleaned) with `summary` as its `backup.yaml`, in memory.
pub fn write_archive(summary: &BackupSummary, objects: &[Value]) -> Result<Vec<u8>, ArchiveError> {
    let mut files = objects
        .iter()
        .map(|o| Ok((path_of(o), yaml(o)?)))
        .collect::<Result<Vec<_>, ArchiveError>>()?;
    files.sort_by(|a, b| a.0.cmp(&b.0));
    pack(summary, files)
}

/// The list of keys in the archive of a key-space backup (the values are sealed in the vault).
pub const KEYS_FILE: &str = "keys.txt";

/// The archive of a key-space backup: `summary` as its `backup.yaml` and `listing` (one line
/// per key with its value's size) as `keys.txt`.
pub fn write_key_space_archive(
    summary: &BackupSummary,
    listing: String,
) -> Result<Vec<u8>, ArchiveError> {
    pack(summary, vec![(KEYS_FILE.to_owned(), listing)])
}

/// A gzipped tar of `backup.yaml` and `files`, in this order.
fn pack(summary: &BackupSummary, files: Vec<(String, String)>) -> Result<Vec<u8>, ArchiveError> {
    let write_err = |e: std::io::Error| ArchiveError::Write(e.to_string());
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::default()));
    let mut total = 0usize;
    let mut add = |tar: &mut tar::Builder<GzEncoder<Vec<u8>>>, path: &str, text: &str| {
        total += text.len();
        if total > MAX_CONTENT_BYTES {
            return Err(ArchiveError::TooLarge);
        }
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(summary.taken_at.timestamp().max(0) as u64);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, path, text.as_bytes())
            .map_err(write_err)
    };
    add(&mut tar, SUMMARY_FILE, &yaml(summary)?)?;
    for (path, text) in files {
        add(&mut tar, &path, &text)?;
    }
    let gz = tar.into_inner().map_err(write_err)?;
    gz.finish().map_err(write_err)
}

/// An archive read back: its summary and every object with its path.
#[derive(Debug)]
pub struct ReadArchive {
    pub summary: BackupSummary,
    pub objects: Vec<(String, Value)>,
}

/// Reads an archive [`write_archive`] wrote.
pub fn read_archive(bytes: &[u8]) -> Result<ReadArchive, ArchiveError> {
    let bad = |e: &dyn std::fmt::Display| ArchiveError::Unreadable(e.to_string());
    let mut tar = tar::Archive::new(GzDecoder::new(bytes));
    let mut summary = None;
    let mut objects = Vec::new();
    let mut total = 0usize;
    for entry in tar.entries().map_err(|e| bad(&e))? {
        let mut entry = entry.map_err(|e| bad(&e))?;
        let path = entry
            .path()
            .map_err(|e| bad(&e))?
            .to_string_lossy()
            .into_owned();
        let size = usize::try_from(entry.size()).unwrap_or(usize::MAX);
        total = total.saturating_add(size);
        if total > MAX_CONTENT_BYTES {
            return Err(ArchiveError::TooLarge);
        }
        let mut text = String::with_capacity(size);
        entry.read_to_string(&mut text).map_err(|e| bad(&e))?;
        if path == SUMMARY_FILE {
            summary = Some(serde_saphyr::from_str(&text).map_err(|e| bad(&e))?);
        } else {
            let object: Value =
                serde_saphyr::from_str(&text).map_err(|e| bad(&format!("{path}: {e}")))?;
            objects.push((path, object));
        }
    }
    Ok(ReadArchive {
        summary: summary.ok_or_else(|| bad(&format!("it has no {SUMMARY_FILE}")))?,
        objects,
    })
}

/// Sealed Secrets of a backup, as the vault keeps them: one YAML stream.
pub fn secrets_stream(secrets: &[Value]) -> Result<Vec<u8>, ArchiveError> {
    let mut out = Vec::new();
    for s in secrets {
        out.extend_from_slice(b"---\n");
        out.extend_from_slice(yaml(s)?.as_bytes());
    }
    Ok(out)
}

/// The Secrets of a [`secrets_stream`], read back.
pub fn read_secrets_stream(bytes: &[u8]) -> Result<Vec<Value>, ArchiveError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ArchiveError::Unreadable("the sealed Secrets are not UTF-8".into()))?;
    let mut documents = vec![String::new()];
    for line in text.lines() {
        if line == "---" {
            documents.push(String::new());
        } else if let Some(doc) = documents.last_mut() {
            doc.push_str(line);
            doc.push('\n');
        }
    }
    documents
        .iter()
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).map_err(|e| ArchiveError::Unreadable(e.to_string())))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::backup::VOLUME_GUIDANCE;

    fn summary() -> BackupSummary {
        BackupSummary {
            cluster: "shop".into(),
            tenant: "team-a".into(),
            taken_at: chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            kubernetes_version: Some("v1.20.2".into()),
            objects: 3,
            secrets: 0,
            secrets_left_out: 1,
            namespaces: vec!["shop".into()],
            kinds: vec![],
            left_out: vec![],
            volumes: vec![],
            volume_guidance: VOLUME_GUIDANCE.into(),
            snapshots: None,
            key_space: None,
        }
    }

    #[test]
    fn a_key_space_archive_holds_the_summary_and_the_keys_only() {
        let mut s = summary();
        s.key_space = Some(crate::backup::KeySpaceCopy {
            revision: 12,
            keys: 1,
            bytes: 40,
        });
        let bytes = write_key_space_archive(&s, "9\tregistry/namespaces/shop\n".into()).unwrap();
        let mut tar = tar::Archive::new(GzDecoder::new(bytes.as_slice()));
        let mut files = Vec::new();
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().to_string_lossy().into_owned();
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            files.push((path, text));
        }
        assert_eq!(files[0].0, SUMMARY_FILE);
        let back: BackupSummary = serde_saphyr::from_str(&files[0].1).unwrap();
        assert_eq!(back, s);
        assert_eq!(
            files[1],
            (
                KEYS_FILE.to_owned(),
                "9\tregistry/namespaces/shop\n".to_owned()
            )
        );
        assert_eq!(files.len(), 2);
    }

    #[test]
    fn objects_are_filed_by_namespace_group_kind_and_name() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": "shop"}});
        assert_eq!(path_of(&cm), "shop/core/ConfigMap/settings.yaml");
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:reader"}});
        assert_eq!(
            path_of(&role),
            "_cluster/rbac.authorization.k8s.io/ClusterRole/system:reader.yaml"
        );
        let hostile = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "../../etc/passwd", "namespace": ".."}});
        let path = path_of(&hostile);
        assert!(!path.contains("../"), "{path}");
        assert_eq!(path.split('/').count(), 4, "{path}");
    }

    #[test]
    fn an_archive_reads_back_as_written() {
        let objects = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "shop"}, "spec": {"replicas": 2}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}),
            json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
                "metadata": {"name": "nightly", "namespace": "shop"},
                "spec": {"cronSpec": "* * * * */5", "note": "a: b\n- c"}}),
        ];
        let bytes = write_archive(&summary(), &objects).unwrap();
        let read = read_archive(&bytes).unwrap();
        assert_eq!(read.summary, summary());
        let paths: Vec<&str> = read.objects.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "_cluster/core/Namespace/shop.yaml",
                "shop/apps/Deployment/web.yaml",
                "shop/stable.example.com/CronTab/nightly.yaml",
            ],
            "sorted, so two backups of one cluster compare file by file"
        );
        for (path, object) in &read.objects {
            assert!(objects.contains(object), "{path}: {object}");
        }
        assert_eq!(
            write_archive(&summary(), &objects).unwrap(),
            bytes,
            "the same content makes the same bytes"
        );
    }

    #[test]
    fn garbage_and_archives_without_a_summary_are_refused() {
        assert!(matches!(
            read_archive(b"not gzip"),
            Err(ArchiveError::Unreadable(_))
        ));
        let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), flate2::Compression::fast()));
        let mut header = tar::Header::new_gnu();
        header.set_size(2);
        tar.append_data(&mut header, "x.yaml", &b"{}"[..]).unwrap();
        let bytes = tar.into_inner().unwrap().finish().unwrap();
        let err = read_archive(&bytes).unwrap_err().to_string();
        assert!(err.contains("backup.yaml"), "{err}");
    }

    #[test]
    fn secrets_become_one_yaml_stream() {
        let s = secrets_stream(&[
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "b"}}),
        ])
        .unwrap();
        let back = read_secrets_stream(&s).unwrap();
        let text = String::from_utf8(s).unwrap();
        assert_eq!(text.matches("---\n").count(), 2, "{text}");
        assert!(text.contains("name: b"), "{text}");
        assert_eq!(back.len(), 2);
        assert_eq!(back[1]["metadata"]["name"], "b");
        assert!(read_secrets_stream(b"").unwrap().is_empty());
    }
}
