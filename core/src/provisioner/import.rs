//! The `import` provisioner: adopts a cluster that exists already, from its admin kubeconfig.
//!
//! Nothing is built and nothing is removed: create checks that the API server answers, and
//! delete only makes KQueen forget the cluster. The uploaded kubeconfig (a secret cluster
//! parameter) is checked by [`crate::kubernetes::parse_kubeconfig`] — no file references, no
//! credential plugins unless the provider allows them — and what KQueen keeps is a minimal
//! kubeconfig with the chosen context only.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use super::{
    Capabilities, OpContext, ParamKind, ParamSchema, ParamSpec, Params, ProviderKind,
    ProvisionError, Provisioned, Provisioner, Step,
};
use crate::kubernetes::{parse_kubeconfig, probe_version, ParsedKubeconfig, ProbeError};
use crate::ValidationError;

const DEFAULT_PROBE_TIMEOUT_SECS: i64 = 10;
const MAX_PROBE_TIMEOUT_SECS: i64 = 120;

/// Installation-wide options of the `import` provisioner.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Refuse credential plugins (exec, auth-provider) whatever a provider's `allow_exec`
    /// says: for installations where no provider may run commands on the KQueen server.
    pub forbid_exec: bool,
}

/// Imports existing clusters from a kubeconfig.
/// This provisioner's checkpoint: what the cluster's API server answered during create.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server_version: Option<String>,
}

pub struct ImportProvisioner {
    options: ImportOptions,
}

impl ImportProvisioner {
    pub fn new(options: ImportOptions) -> Self {
        Self { options }
    }

    fn allow_exec(&self, config: &Params) -> bool {
        !self.options.forbid_exec && config.get("allow_exec").map(String::as_str) == Some("true")
    }

    /// The uploaded kubeconfig, checked.
    fn parse(&self, ctx: &OpContext) -> Result<ParsedKubeconfig, ValidationError> {
        let secret = ctx
            .param_secrets
            .get("kubeconfig")
            .ok_or_else(|| ValidationError::new("kubeconfig", "is required"))?;
        let text = std::str::from_utf8(secret.expose())
            .map_err(|_| ValidationError::new("kubeconfig", "must be text (UTF-8 YAML)"))?;
        let context = ctx.params.get("context").map(String::as_str);
        parse_kubeconfig(text, context, self.allow_exec(&ctx.provider_config))
    }
}

fn probe_timeout(config: &Params) -> Duration {
    let secs = config
        .get("probe_timeout_seconds")
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or(DEFAULT_PROBE_TIMEOUT_SECS)
        .clamp(1, MAX_PROBE_TIMEOUT_SECS);
    Duration::from_secs(secs.unsigned_abs())
}

/// A failed probe during an operation: network trouble is retried, the rest fails.
fn probe_failure(e: ProbeError) -> ProvisionError {
    if e.is_transient() {
        ProvisionError::Transient(e.to_string())
    } else {
        ProvisionError::Failed(e.to_string())
    }
}

#[async_trait]
impl Provisioner for ImportProvisioner {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Import
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    fn allows_exec(&self, config: &Params) -> bool {
        self.allow_exec(config)
    }

    fn provider_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![
            ParamSpec::new(
                "allow_exec",
                "Allow credential plugins",
                ParamKind::Boolean { default: false },
            )
            .help(
                "Accept kubeconfigs whose user runs an exec plugin or auth-provider (aws, \
                 gke-gcloud-auth-plugin, kubelogin…). The plugin is a command that runs on the \
                 KQueen server, with its permissions, every time KQueen talks to the cluster, \
                 and must be installed there. Leave off unless you trust everyone who may \
                 import clusters with this provider.",
            ),
            ParamSpec::new(
                "probe_timeout_seconds",
                "API server timeout (seconds)",
                ParamKind::Integer {
                    default: Some(DEFAULT_PROBE_TIMEOUT_SECS),
                    min: Some(1),
                    max: Some(MAX_PROBE_TIMEOUT_SECS),
                },
            )
            .help("How long to wait for the cluster's API server to answer /version."),
        ])
    }

    fn cluster_schema(&self) -> ParamSchema {
        ParamSchema::new(vec![
            ParamSpec::new(
                "kubeconfig",
                "Kubeconfig",
                ParamKind::Text {
                    max_len: crate::kubernetes::MAX_KUBECONFIG_BYTES as u32,
                },
            )
            .required()
            .secret()
            .help(
                "An admin kubeconfig of the cluster, with the certificate, key or token \
                 embedded (…-data fields), not as file paths.",
            ),
            ParamSpec::new(
                "context",
                "Context",
                ParamKind::String {
                    default: None,
                    max_len: 253,
                },
            )
            .help("The kubeconfig context to use; by default its current-context."),
        ])
    }

    fn check_provider(&self, config: &Params) -> Result<(), ValidationError> {
        if self.options.forbid_exec && config.get("allow_exec").map(String::as_str) == Some("true")
        {
            return Err(ValidationError::new(
                "allow_exec",
                "credential plugins are disabled in this installation",
            ));
        }
        Ok(())
    }

    async fn check_request(&self, ctx: &OpContext) -> Result<(), ValidationError> {
        let parsed = self.parse(ctx)?;
        probe_version(&parsed, probe_timeout(&ctx.provider_config))
            .await
            .map(|_| ())
            .map_err(|e| ValidationError::new("kubeconfig", e.to_string()))
    }

    async fn create(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        let parsed = self
            .parse(ctx)
            .map_err(|e| ProvisionError::Failed(e.to_string()))?;
        ctx.reporter.step(format!(
            "Checking the API server at {} (context {})",
            parsed.server(),
            parsed.context()
        ));
        let version = probe_version(&parsed, probe_timeout(&ctx.provider_config))
            .await
            .map_err(probe_failure)?;
        ctx.reporter
            .log(format!("the API server answered: Kubernetes {version}"));
        ctx.write_checkpoint(&Checkpoint {
            server_version: Some(version),
        });
        ctx.reporter.progress(100);
        Ok(Step::Done(()))
    }

    async fn kubeconfig(&self, ctx: &mut OpContext) -> Result<Provisioned, ProvisionError> {
        let parsed = self
            .parse(ctx)
            .map_err(|e| ProvisionError::Failed(e.to_string()))?;
        let checkpoint: Checkpoint = ctx.read_checkpoint("import")?;
        let version = match checkpoint.server_version {
            Some(v) => Some(v),
            // Resumed without create's checkpoint: ask again, but a missing fact is no
            // reason to fail an import that create already checked.
            None => probe_version(&parsed, probe_timeout(&ctx.provider_config))
                .await
                .ok(),
        };
        Ok(Provisioned {
            kubeconfig: parsed.to_yaml(),
            endpoint: Some(parsed.server().to_owned()),
            state: json!({
                "context": parsed.context(),
                "server_version": version,
            }),
        })
    }

    async fn delete(&self, ctx: &mut OpContext) -> Result<Step<()>, ProvisionError> {
        ctx.reporter
            .step("Forgetting the imported cluster; nothing is removed from it");
        Ok(Step::Done(()))
    }
}
