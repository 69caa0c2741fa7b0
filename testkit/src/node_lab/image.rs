//! Container images built from files, as no registry is reachable: a one-layer OCI image
//! archive (`oci-layout`, `index.json`, blobs) that `ctr images import` takes. The layer is
//! an uncompressed tar (`application/vnd.oci.image.layer.v1.tar`), so its digest and its
//! diff id are the same.

use std::path::Path;

use serde_json::json;
use sha2::{Digest, Sha256};

/// What goes into an image: its reference, entrypoint, environment, user and files.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    /// `registry/name:tag`, as pods name it.
    pub reference: String,
    pub entrypoint: Vec<String>,
    pub env: Vec<String>,
    /// `uid:gid`, or empty for root.
    pub user: String,
    /// (file on this host, path in the image), executable; parents are created.
    pub files: Vec<(String, String)>,
    /// (path in the image, content, mode): files written from memory.
    pub data: Vec<(String, Vec<u8>, u32)>,
    /// Symbolic links in the image: (path, target).
    pub links: Vec<(String, String)>,
}

impl ImageSpec {
    /// An image of `files` running `entrypoint` as root, `PATH=/bin`.
    pub fn new(reference: &str, entrypoint: &[&str]) -> Self {
        Self {
            reference: reference.to_owned(),
            entrypoint: entrypoint.iter().map(|s| (*s).to_owned()).collect(),
            env: vec!["PATH=/bin".into()],
            user: String::new(),
            files: Vec::new(),
            data: Vec::new(),
            links: Vec::new(),
        }
    }

    /// A file of `content` at `path`, with `mode`.
    pub fn data(mut self, path: &str, content: Vec<u8>, mode: u32) -> Self {
        self.data.push((path.to_owned(), content, mode));
        self
    }

    pub fn env(mut self, variable: &str) -> Self {
        self.env.push(variable.to_owned());
        self
    }

    pub fn file(mut self, host: &str, image: &str) -> Self {
        self.files.push((host.to_owned(), image.to_owned()));
        self
    }

    pub fn link(mut self, path: &str, target: &str) -> Self {
        self.links.push((path.to_owned(), target.to_owned()));
        self
    }

    pub fn user(mut self, user: &str) -> Self {
        self.user = user.to_owned();
        self
    }
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn layer(spec: &ImageSpec) -> std::io::Result<Vec<u8>> {
    let mut tar = tar::Builder::new(Vec::new());
    tar.mode(tar::HeaderMode::Deterministic);
    let mut dirs = std::collections::BTreeSet::new();
    let paths = spec
        .files
        .iter()
        .map(|(_, p)| p)
        .chain(spec.data.iter().map(|(p, _, _)| p))
        .chain(spec.links.iter().map(|(p, _)| p));
    for path in paths {
        let mut parent = Path::new(path.trim_start_matches('/')).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            dirs.insert(p.to_path_buf());
            parent = p.parent();
        }
    }
    // /tmp too: programs write there.
    dirs.insert("tmp".into());
    for dir in dirs {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(if dir == Path::new("tmp") {
            0o1777
        } else {
            0o755
        });
        header.set_size(0);
        tar.append_data(&mut header, &dir, std::io::empty())?;
    }
    for (host, image) in &spec.files {
        let data = std::fs::read(host)?;
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o755);
        header.set_size(data.len() as u64);
        tar.append_data(&mut header, image.trim_start_matches('/'), data.as_slice())?;
    }
    for (path, data, mode) in &spec.data {
        let mut header = tar::Header::new_gnu();
        header.set_mode(*mode);
        header.set_size(data.len() as u64);
        tar.append_data(&mut header, path.trim_start_matches('/'), data.as_slice())?;
    }
    for (path, target) in &spec.links {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Symlink);
        header.set_size(0);
        tar.append_link(&mut header, path.trim_start_matches('/'), target)?;
    }
    tar.into_inner()
}

/// Writes the image archive to `out`; returns the manifest's digest (what a registry would
/// call the image's digest).
pub fn write_archive(spec: &ImageSpec, out: &Path) -> std::io::Result<String> {
    let layer = layer(spec)?;
    let layer_digest = sha256(&layer);
    let mut config = json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": spec.entrypoint, "Env": spec.env},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    });
    if !spec.user.is_empty() {
        config["config"]["User"] = json!(spec.user);
    }
    let config = serde_json::to_vec(&config)?;
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": sha256(&config), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest, "size": layer.len()}],
    }))?;
    let manifest_digest = sha256(&manifest);
    let index = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest, "size": manifest.len(),
            "annotations": {"org.opencontainers.image.ref.name": spec.reference,
                            "io.containerd.image.name": spec.reference},
        }],
    }))?;
    let mut tar = tar::Builder::new(std::fs::File::create(out)?);
    let mut add = |name: &str, data: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o644);
        header.set_size(data.len() as u64);
        tar.append_data(&mut header, name, data)
    };
    add("oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
    add("index.json", &index)?;
    for blob in [&config, &manifest, &layer] {
        let digest = sha256(blob);
        add(
            &format!("blobs/sha256/{}", digest.trim_start_matches("sha256:")),
            blob,
        )?;
    }
    tar.into_inner()?;
    Ok(manifest_digest)
}

#[cfg(test)]
mod tests {
    use super::{write_archive, ImageSpec};

    #[test]
    fn an_archive_holds_the_layout_the_index_and_every_blob_under_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("tool");
        std::fs::write(&host, b"#!/bin/sh\n").unwrap();
        let spec = ImageSpec::new("kqueen.local/tool:1", &["/bin/tool"])
            .file(host.to_str().unwrap(), "/bin/tool")
            .link("/bin/sh", "tool")
            .user("1000:1000");
        let out = dir.path().join("image.tar");
        let digest = write_archive(&spec, &out).unwrap();
        let mut names = Vec::new();
        let mut archive = tar::Archive::new(std::fs::File::open(&out).unwrap());
        for entry in archive.entries().unwrap() {
            let mut entry = entry.unwrap();
            let name = entry.path().unwrap().display().to_string();
            let mut body = Vec::new();
            std::io::Read::read_to_end(&mut entry, &mut body).unwrap();
            if let Some(hex) = name.strip_prefix("blobs/sha256/") {
                assert_eq!(super::sha256(&body), format!("sha256:{hex}"), "{name}");
            }
            if name == "index.json" {
                let index: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(index["manifests"][0]["digest"], digest.as_str());
                assert_eq!(
                    index["manifests"][0]["annotations"]["io.containerd.image.name"],
                    "kqueen.local/tool:1"
                );
            }
            names.push(name);
        }
        assert_eq!(names.len(), 5, "{names:?}");
        assert!(names.contains(&format!("blobs/sha256/{}", &digest[7..])));
        // The same files make the same image.
        let again = write_archive(&spec, &dir.path().join("again.tar")).unwrap();
        assert_eq!(again, digest);
    }
}
