//! The files a command sees: its working directory and the kubeconfig it writes (create) or
//! finds (later actions), removed as soon as it is no longer needed.

use std::path::{Path, PathBuf};

use crate::provisioner::command::{KUBECONFIG_FILE, MAX_KUBECONFIG};
use crate::provisioner::{ProvisionError, Provisioned};
use crate::vault::Secret;

/// Removes a plaintext kubeconfig when dropped.
pub(super) struct KubeconfigFile(PathBuf);

impl Drop for KubeconfigFile {
    fn drop(&mut self) {
        remove_kubeconfig(&self.0);
    }
}

pub(super) fn remove_kubeconfig(path: &Path) {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => tracing::warn!(error = %e, "removing a plaintext kubeconfig failed"),
    }
}

/// Writes the admin kubeconfig for a command to use (mode 0600).
pub(super) fn write_kubeconfig(
    path: &Path,
    kubeconfig: &Secret,
) -> Result<KubeconfigFile, ProvisionError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let guard = KubeconfigFile(path.to_owned());
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(kubeconfig.expose()))
        .map_err(|e| ProvisionError::Failed(format!("cannot write $KQ_KUBECONFIG: {e}")))?;
    Ok(guard)
}

pub(super) fn absolute(dir: &Path) -> Result<PathBuf, ProvisionError> {
    std::path::absolute(dir)
        .map_err(|e| ProvisionError::Failed(format!("the cluster's work directory: {e}")))
}

/// Creates the work dir (private: it will hold an admin kubeconfig) and returns its
/// absolute path, which the command gets in variables although its cwd changes.
pub(super) async fn prepare_work_dir(dir: &Path) -> Result<PathBuf, ProvisionError> {
    let dir = absolute(dir)?;
    tokio::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .await
        .map_err(|e| {
            ProvisionError::Failed(format!(
                "cannot create the work directory {}: {e}",
                dir.display()
            ))
        })?;
    Ok(dir)
}

/// The kubeconfig the create command left in the work dir. Errors never quote its content.
pub(super) async fn read_kubeconfig(work_dir: &Path) -> Result<Provisioned, ProvisionError> {
    let path = work_dir.join(KUBECONFIG_FILE);
    let failed = |m: &str| ProvisionError::Failed(m.to_owned());
    let meta = match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => {
            return Err(failed(
                "$KQ_KUBECONFIG written by the create command is not a file",
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(failed("the create command did not write $KQ_KUBECONFIG"))
        }
        Err(e) => {
            return Err(ProvisionError::Failed(format!(
                "cannot read $KQ_KUBECONFIG: {e}"
            )))
        }
    };
    if meta.len() > MAX_KUBECONFIG {
        return Err(failed(
            "$KQ_KUBECONFIG is larger than 1 MiB: not a kubeconfig",
        ));
    }
    let bytes = tokio::fs::read(&path)
        .await
        .map_err(|e| ProvisionError::Failed(format!("cannot read $KQ_KUBECONFIG: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|_| failed("$KQ_KUBECONFIG is not UTF-8 text"))?;
    let parsed = crate::kubernetes::read_kubeconfig(&text)
        .map_err(|_| failed("$KQ_KUBECONFIG does not parse as a kubeconfig"))?;
    let endpoint = current_server(&parsed).map_err(|m| {
        ProvisionError::Failed(format!("the kubeconfig written by the create command {m}"))
    })?;
    Ok(Provisioned {
        kubeconfig: Secret::new(text.into_bytes()),
        endpoint: Some(endpoint),
        state: serde_json::json!({ "work_dir": work_dir }),
    })
}

/// The API server of the kubeconfig's current context (or of its only context).
pub(super) fn current_server(k: &kube::config::Kubeconfig) -> Result<String, &'static str> {
    let name = match k.current_context.as_deref().filter(|c| !c.is_empty()) {
        Some(name) => name,
        None if k.contexts.len() == 1 => k.contexts[0].name.as_str(),
        None => return Err("names no current context"),
    };
    let context = k
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.as_ref())
        .ok_or("names a current context it does not define")?;
    k.clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.server.clone())
        .filter(|s| !s.trim().is_empty())
        .ok_or("has no server for its current context")
}
