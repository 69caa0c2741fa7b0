//! Where backup archives are kept, from the settings: the backup directory (the default) or
//! a bucket of an S3-compatible store. Incomplete or invalid S3 settings stop the start-up
//! with the key to fix named; the secret access key is never part of a message.

use std::sync::Arc;

use kqueen_core::backup::storage::{ArchiveDir, Archives, S3Archives, S3Config};
use kqueen_core::Error;
use secrecy::{ExposeSecret, SecretString};

use super::Settings;

/// The environment variable of the S3 setting `field` (`KQUEEN_BACKUP_S3_BUCKET`).
fn variable(field: &str) -> String {
    format!("KQUEEN_BACKUP_S3_{}", field.to_ascii_uppercase())
}

fn missing(field: &str) -> String {
    format!(
        "KQUEEN_BACKUP_STORE=s3 needs {} (backup_s3_{field} in the configuration file)",
        variable(field)
    )
}

fn set(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

impl Settings {
    /// The archive store the settings describe: `backup_store` `dir` (or unset) keeps
    /// archives in [`Settings::backup_dir`], `s3` in the bucket of the `backup_s3_*` keys.
    /// The error names the key that is missing or wrong.
    pub fn archives(&self) -> Result<Archives, String> {
        match self.backup_store.as_deref().map(str::trim).unwrap_or("") {
            "" | "dir" => Ok(Arc::new(ArchiveDir::new(self.backup_dir()))),
            "s3" => {
                let store = S3Archives::new(&self.s3_config()?).map_err(|e| match e {
                    Error::Invalid(v) => format!("{}: {}", variable(v.field), v.message),
                    other => other.to_string(),
                })?;
                Ok(Arc::new(store))
            }
            other => Err(format!(
                "KQUEEN_BACKUP_STORE must be dir or s3, not '{other}'"
            )),
        }
    }

    /// The `backup_s3_*` settings, all the required ones present.
    fn s3_config(&self) -> Result<S3Config, String> {
        let required =
            |value: &Option<String>, field: &str| set(value).ok_or_else(|| missing(field));
        let secret = self
            .backup_s3_secret_access_key
            .as_ref()
            .map(|s| s.expose_secret().trim())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| missing("secret_access_key"))?;
        Ok(S3Config {
            endpoint: set(&self.backup_s3_endpoint),
            region: set(&self.backup_s3_region).unwrap_or_else(|| "us-east-1".into()),
            bucket: required(&self.backup_s3_bucket, "bucket")?,
            prefix: set(&self.backup_s3_prefix).unwrap_or_default(),
            path_style: self.backup_s3_path_style,
            access_key_id: required(&self.backup_s3_access_key_id, "access_key_id")?,
            secret_access_key: SecretString::from(secret),
        })
    }
}

#[cfg(test)]
mod tests {
    // figment's Jail fixes the closures' error type.
    #![allow(clippy::unwrap_used, clippy::result_large_err)]
    use std::path::Path;

    use figment::Jail;

    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY-hunter2";

    /// A complete S3 store at a local endpoint, in the environment.
    fn s3_env(jail: &mut Jail) {
        let all = [
            ("KQUEEN_BACKUP_STORE", "s3"),
            ("KQUEEN_BACKUP_S3_ENDPOINT", "http://127.0.0.1:9000"),
            ("KQUEEN_BACKUP_S3_BUCKET", "kq-backups"),
            ("KQUEEN_BACKUP_S3_PREFIX", "prod/backups"),
            ("KQUEEN_BACKUP_S3_PATH_STYLE", "true"),
            ("KQUEEN_BACKUP_S3_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("KQUEEN_BACKUP_S3_SECRET_ACCESS_KEY", SECRET),
        ];
        for (name, value) in all {
            jail.set_env(name, value);
        }
    }

    fn error(s: &Settings) -> String {
        let e = s.archives().unwrap_err();
        assert!(!e.contains("hunter2"), "{e}");
        e
    }

    #[test]
    fn archives_stay_in_the_backup_directory_by_default() {
        Jail::expect_with(|jail| {
            let s = Settings::load(None).map_err(|e| *e)?;
            let shown = format!("{:?}", s.archives().unwrap());
            assert!(
                shown.contains("ArchiveDir") && shown.contains("data/backups"),
                "{shown}"
            );
            jail.set_env("KQUEEN_BACKUP_STORE", "dir");
            jail.set_env("KQUEEN_BACKUP_DIR", "/shared/backups");
            let s = Settings::load(None).map_err(|e| *e)?;
            assert!(format!("{:?}", s.archives().unwrap()).contains("/shared/backups"));
            Ok(())
        });
    }

    #[test]
    fn an_s3_bucket_is_read_from_the_environment() {
        Jail::expect_with(|jail| {
            s3_env(jail);
            let s = Settings::load(None).map_err(|e| *e)?;
            let config = s.s3_config().unwrap();
            assert_eq!(config.region, "us-east-1", "the default region");
            assert_eq!(
                (
                    config.bucket.as_str(),
                    config.prefix.as_str(),
                    config.path_style
                ),
                ("kq-backups", "prod/backups", true)
            );
            assert_eq!(config.secret_access_key.expose_secret(), SECRET);
            let shown = format!("{:?}", s.archives().unwrap());
            assert!(
                shown.contains("S3 bucket 'kq-backups' at http://127.0.0.1:9000"),
                "{shown}"
            );
            for shown in [shown, format!("{s:?}"), format!("{config:?}")] {
                assert!(
                    !shown.contains("hunter2"),
                    "Debug must redact the secret: {shown}"
                );
            }
            Ok(())
        });
    }

    #[test]
    fn a_configuration_file_names_the_bucket_and_the_environment_the_secret() {
        Jail::expect_with(|jail| {
            jail.create_file(
                "kqueen.toml",
                "backup_store = \"s3\"\nbackup_s3_endpoint = \"https://s3.example.com\"\n\
                 backup_s3_region = \"eu-central-1\"\nbackup_s3_bucket = \"kq\"\n\
                 backup_s3_access_key_id = \"AKIDEXAMPLE\"\n",
            )?;
            let file = Path::new("kqueen.toml");
            let s = Settings::load(Some(file)).map_err(|e| *e)?;
            assert!(error(&s).contains("KQUEEN_BACKUP_S3_SECRET_ACCESS_KEY"));
            jail.set_env("KQUEEN_BACKUP_S3_SECRET_ACCESS_KEY", SECRET);
            let s = Settings::load(Some(file)).map_err(|e| *e)?;
            let config = s.s3_config().unwrap();
            assert_eq!(
                (config.region.as_str(), config.path_style),
                ("eu-central-1", false)
            );
            let shown = format!("{:?}", s.archives().unwrap());
            assert!(
                shown.contains("S3 bucket 'kq' at https://s3.example.com"),
                "{shown}"
            );
            Ok(())
        });
    }

    #[test]
    fn incomplete_or_wrong_s3_settings_name_the_key() {
        Jail::expect_with(|jail| {
            for name in [
                "KQUEEN_BACKUP_S3_BUCKET",
                "KQUEEN_BACKUP_S3_ACCESS_KEY_ID",
                "KQUEEN_BACKUP_S3_SECRET_ACCESS_KEY",
            ] {
                s3_env(jail);
                jail.set_env(name, " ");
                let s = Settings::load(None).map_err(|e| *e)?;
                let e = error(&s);
                assert!(
                    e.contains(name) && e.contains("KQUEEN_BACKUP_STORE=s3"),
                    "{e}"
                );
            }
            s3_env(jail);
            // Virtual-hosted addressing needs a host name to put the bucket in.
            jail.set_env("KQUEEN_BACKUP_S3_PATH_STYLE", "false");
            let s = Settings::load(None).map_err(|e| *e)?;
            assert!(error(&s).contains("KQUEEN_BACKUP_S3_PATH_STYLE"));
            jail.set_env("KQUEEN_BACKUP_S3_PATH_STYLE", "true");
            jail.set_env("KQUEEN_BACKUP_S3_PREFIX", "a//b");
            let s = Settings::load(None).map_err(|e| *e)?;
            assert!(error(&s).contains("KQUEEN_BACKUP_S3_PREFIX"));
            jail.set_env("KQUEEN_BACKUP_S3_PREFIX", "");
            jail.set_env("KQUEEN_BACKUP_S3_ENDPOINT", "s3.example.com");
            let s = Settings::load(None).map_err(|e| *e)?;
            assert!(error(&s).contains("KQUEEN_BACKUP_S3_ENDPOINT"));
            jail.set_env("KQUEEN_BACKUP_STORE", "gcs");
            let s = Settings::load(None).map_err(|e| *e)?;
            assert!(error(&s).contains("must be dir or s3, not 'gcs'"));
            Ok(())
        });
    }
}
