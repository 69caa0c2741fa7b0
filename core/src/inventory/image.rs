//! Container image references as Kubernetes reports them (`nginx`, `nginx:1.27`,
//! `ghcr.io/org/app:v2@sha256:…`, `localhost:5000/tool`), split into registry, repository,
//! tag and digest the way the container runtimes resolve them.

use serde::{Deserialize, Serialize};

/// The registry of references that name none (`nginx`, `org/app`).
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ImageRef {
    /// Host (and port) of the registry, e.g. `docker.io`, `registry.k8s.io`.
    pub registry: String,
    /// Path inside the registry, e.g. `library/nginx`.
    pub repository: String,
    /// `None` when the reference names no tag (the runtime pulls `latest`, unless a digest
    /// is given).
    pub tag: Option<String>,
    /// `sha256:…` when the reference or the pod status names it.
    pub digest: Option<String>,
}

impl ImageRef {
    /// Parses a reference; `None` for empty or malformed text (spaces, empty path parts).
    pub fn parse(reference: &str) -> Option<Self> {
        let reference = reference.trim();
        if reference.is_empty() || reference.len() > 1024 || reference.contains(char::is_whitespace)
        {
            return None;
        }
        let (name, digest) = match reference.split_once('@') {
            Some((n, d)) if is_digest(d) => (n, Some(d.to_owned())),
            Some(_) => return None,
            None => (reference, None),
        };
        // A tag follows the last ':' after the last '/'; a ':' before it is a registry port.
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (path, tag) = match name[last_slash..].rfind(':') {
            Some(i) => {
                let tag = &name[last_slash + i + 1..];
                if tag.is_empty() {
                    return None;
                }
                (&name[..last_slash + i], Some(tag.to_owned()))
            }
            None => (name, None),
        };
        // The first component is a registry when it looks like a host: has a '.' or a ':',
        // or is `localhost` (the rule of the reference grammar used by Docker and containerd).
        let (registry, repository) = match path.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_owned(), rest.to_owned())
            }
            _ => (DEFAULT_REGISTRY.to_owned(), path.to_owned()),
        };
        let repository = if registry == DEFAULT_REGISTRY && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        if repository.split('/').any(str::is_empty) {
            return None;
        }
        Some(Self {
            registry: registry.to_lowercase(),
            repository,
            tag,
            digest,
        })
    }

    /// The digest in a container status' `imageID` (`docker-pullable://nginx@sha256:…`,
    /// `docker.io/library/nginx@sha256:…`, or a bare `sha256:…`).
    pub fn digest_of_image_id(image_id: &str) -> Option<String> {
        let tail = image_id.rsplit_once('@').map_or(image_id, |(_, d)| d);
        is_digest(tail).then(|| tail.to_owned())
    }

    /// `registry/repository[:tag][@digest]`, the form shown and searched.
    pub fn reference(&self) -> String {
        let mut s = format!("{}/{}", self.registry, self.repository);
        if let Some(t) = &self.tag {
            s.push(':');
            s.push_str(t);
        }
        if let Some(d) = &self.digest {
            s.push('@');
            s.push_str(d);
        }
        s
    }

    /// True when the runtime pulls a moving tag: `:latest`, or no tag and no digest.
    pub fn floats(&self) -> bool {
        self.digest.is_none() && self.tag.as_deref().is_none_or(|t| t == "latest")
    }
}

fn is_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    !algo.is_empty()
        && algo.chars().all(|c| c.is_ascii_alphanumeric())
        && hex.len() >= 32
        && hex.chars().all(|c| c.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn p(s: &str) -> ImageRef {
        ImageRef::parse(s).expect("a valid reference")
    }

    #[test]
    fn docker_hub_short_names() {
        let i = p("nginx");
        assert_eq!(
            (i.registry.as_str(), i.repository.as_str(), i.tag, i.digest),
            ("docker.io", "library/nginx", None, None)
        );
        assert_eq!(p("nginx:1.27").tag.as_deref(), Some("1.27"));
        assert_eq!(p("bitnami/redis:7").repository, "bitnami/redis");
        assert_eq!(p("nginx:1.27").reference(), "docker.io/library/nginx:1.27");
    }

    #[test]
    fn registries_ports_and_digests() {
        let i = p(&format!("ghcr.io/org/team/app:v2@{SHA}"));
        assert_eq!(i.registry, "ghcr.io");
        assert_eq!(i.repository, "org/team/app");
        assert_eq!(i.tag.as_deref(), Some("v2"));
        assert_eq!(i.digest.as_deref(), Some(SHA));
        let i = p("localhost:5000/tool");
        assert_eq!((i.registry.as_str(), i.tag), ("localhost:5000", None));
        let i = p("registry.local:443/ns/app:1.0");
        assert_eq!(i.registry, "registry.local:443");
        assert_eq!(i.tag.as_deref(), Some("1.0"));
        assert_eq!(p("localhost/app").registry, "localhost");
    }

    #[test]
    fn malformed_references_are_refused() {
        for s in [
            "",
            "  ",
            "a b",
            "nginx:",
            "nginx@sha256:xyz",
            "a//b",
            "/x",
            "x/",
        ] {
            assert_eq!(ImageRef::parse(s), None, "{s:?}");
        }
    }

    #[test]
    fn digests_from_container_statuses() {
        for id in [
            format!("docker-pullable://nginx@{SHA}"),
            format!("docker.io/library/nginx@{SHA}"),
            SHA.to_owned(),
        ] {
            assert_eq!(ImageRef::digest_of_image_id(&id).as_deref(), Some(SHA));
        }
        assert_eq!(ImageRef::digest_of_image_id(""), None);
        assert_eq!(ImageRef::digest_of_image_id("nginx:1.27"), None);
    }

    #[test]
    fn floating_tags() {
        assert!(p("nginx").floats());
        assert!(p("nginx:latest").floats());
        assert!(!p("nginx:1.27").floats());
        assert!(!p(&format!("nginx@{SHA}")).floats());
        assert!(!p(&format!("nginx:latest@{SHA}")).floats());
    }
}
