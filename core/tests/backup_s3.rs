//! Backup archives in a real S3-compatible server (moto's server mode on 127.0.0.1, with
//! signatures and IAM permissions checked): the store's round trip under a key prefix, the
//! keys as the server lists them, a missing archive (Conflict naming the bucket), wrong
//! credentials and a missing bucket (Backend, never the secret in the message); and the
//! backups service taking, downloading and deleting a backup of a real kube-apiserver with
//! its archive in the bucket. Skipped, saying why, without the server (`scripts/setup.sh
//! test` installs it) or, for the service, without `KQUEEN_TEST_KUBE_APISERVER`.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod support;

use std::sync::Arc;

use kqueen_core::backup::archive::read_archive;
use kqueen_core::backup::storage::{ArchiveStore, S3Archives, S3Config};
use kqueen_core::backup::BackupState;
use kqueen_core::{BackupOptions, BackupRef, ClusterSettings, Error};
use kqueen_testkit::s3_server::{AccessKey, S3Server};
use kqueen_testkit::TestDatabase;
use secrecy::SecretString;
use uuid::Uuid;

const BUCKET: &str = "kq-backups";

fn config(server: &S3Server, key: &AccessKey, prefix: &str) -> S3Config {
    S3Config {
        endpoint: Some(server.endpoint.clone()),
        region: "us-east-1".into(),
        bucket: BUCKET.into(),
        prefix: prefix.into(),
        path_style: true,
        access_key_id: key.id.clone(),
        secret_access_key: SecretString::from(key.secret.clone()),
    }
}

/// The server with a bucket and a user allowed to use it, authentication on.
async fn server() -> Option<(S3Server, AccessKey)> {
    let server = S3Server::start().await?;
    let key = server.user_with_s3_access("kqueen").await;
    server.create_bucket(BUCKET).await;
    server.authenticate(true).await;
    Some((server, key))
}

fn backend(result: kqueen_core::Result<impl std::fmt::Debug>, secret: &str) -> String {
    match result {
        Err(Error::Backend(m)) => {
            assert!(!m.contains(secret), "the secret in a message: {m}");
            m
        }
        other => panic!("not a Backend error: {other:?}"),
    }
}

#[tokio::test]
async fn archives_round_trip_through_a_real_s3_server() {
    let Some((server, key)) = server().await else {
        return;
    };
    let store = S3Archives::new(&config(&server, &key, "/kq/backups/")).unwrap();
    let (c, b) = (Uuid::now_v7(), Uuid::now_v7());

    // Not there yet: Conflict, saying where it looked.
    for missing in [store.require(c, b).await.err(), store.get(c, b).await.err()] {
        match missing {
            Some(Error::Conflict(m)) => {
                assert!(m.contains("S3 bucket 'kq-backups'"), "{m}");
                assert!(!m.contains("data directory"), "{m}");
            }
            other => panic!("not a Conflict: {other:?}"),
        }
    }

    store.put(c, b, b"first archive").await.unwrap();
    store.put(c, b, b"the archive").await.unwrap();
    store.require(c, b).await.unwrap();
    assert_eq!(store.get(c, b).await.unwrap(), b"the archive");
    // The key as the server lists it: under the prefix, and nothing else.
    assert_eq!(
        server.keys(BUCKET).await,
        [format!("kq/backups/{c}/{b}.tar.gz")]
    );

    // Wrong secret, unknown key id: refused, said without the secret.
    let wrong = "wrong-secret-hunter2";
    let bad_secret = AccessKey {
        secret: wrong.into(),
        ..key.clone()
    };
    let refused = S3Archives::new(&config(&server, &bad_secret, "kq/backups")).unwrap();
    let m = backend(refused.put(c, b, b"x").await, wrong);
    assert!(
        m.contains("S3 bucket 'kq-backups'") && m.contains("403"),
        "{m}"
    );
    backend(refused.get(c, b).await, wrong);
    backend(refused.require(c, b).await, wrong);
    backend(refused.remove(c, b).await, wrong);
    let unknown = AccessKey {
        id: "AKIAUNKNOWN000000000".into(),
        secret: wrong.into(),
    };
    let refused = S3Archives::new(&config(&server, &unknown, "")).unwrap();
    backend(refused.get(c, b).await, wrong);
    assert_eq!(
        store.get(c, b).await.unwrap(),
        b"the archive",
        "left as it was"
    );

    // A bucket that does not exist is the store's fault, not a missing archive.
    let absent = S3Archives::new(&S3Config {
        bucket: "no-such-bucket".into(),
        ..config(&server, &key, "")
    })
    .unwrap();
    let m = backend(absent.get(c, b).await, &key.secret);
    assert!(
        m.contains("no-such-bucket") && m.contains("does not exist"),
        "{m}"
    );

    // Without a prefix: at the bucket's root.
    let root = S3Archives::new(&config(&server, &key, "")).unwrap();
    let (c2, b2) = (Uuid::now_v7(), Uuid::now_v7());
    root.put(c2, b2, b"another").await.unwrap();
    let mut keys = server.keys(BUCKET).await;
    keys.sort();
    let mut want = vec![
        format!("kq/backups/{c}/{b}.tar.gz"),
        format!("{c2}/{b2}.tar.gz"),
    ];
    want.sort();
    assert_eq!(keys, want);

    // Removed, twice: gone, and the second time is no error.
    store.remove(c, b).await.unwrap();
    store.remove(c, b).await.unwrap();
    root.remove(c2, b2).await.unwrap();
    assert!(matches!(store.require(c, b).await, Err(Error::Conflict(_))));
    assert!(server.keys(BUCKET).await.is_empty());
}

#[tokio::test]
async fn the_backups_service_keeps_archives_in_the_bucket() {
    let Some((server, key)) = server().await else {
        return;
    };
    let archives = Arc::new(S3Archives::new(&config(&server, &key, "svc")).unwrap());
    let settings = ClusterSettings {
        archives,
        ..ClusterSettings::default()
    };
    let Some(w) = support::world::world_with(TestDatabase::sqlite(), settings).await else {
        return;
    };
    let backups = w.k.backups();
    let (backup, _) = backups
        .take(&w.lead, &w.cluster, BackupOptions::resources(false))
        .await
        .unwrap();
    w.engine.run_until_idle().await.unwrap();
    let id = backup.id.to_string();
    let taken = backups.get(&w.lead, BackupRef::id(&id)).await.unwrap();
    assert_eq!(taken.state, BackupState::Succeeded, "{taken:?}");
    assert_eq!(
        server.keys(BUCKET).await,
        [format!("svc/{}/{id}.tar.gz", w.cluster)]
    );

    let archive = backups
        .archive(&w.lead, BackupRef::of(&w.cluster, &id))
        .await
        .unwrap();
    let read = read_archive(&archive.bytes).unwrap();
    assert_eq!(read.summary.cluster, "prod");
    assert!(!read.objects.is_empty());

    backups.delete(&w.lead, BackupRef::id(&id)).await.unwrap();
    assert!(server.keys(BUCKET).await.is_empty(), "the archive went too");
}
