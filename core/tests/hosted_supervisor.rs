//! The `process` runtime's supervisor with ordinary processes (`sh`, `sleep`): a process that
//! keeps dying is restarted with doubling pauses and its log tail reported; stop ends it and
//! removes its pid file; released processes keep running and a new supervisor (KQueen
//! restarted) adopts them, notices when one dies and starts it again; a changed command line
//! (an upgrade while KQueen was down) replaces the old process, and a stale pid file naming
//! another process (no marker on its command line) is left alone; dropping a supervisor
//! stops nothing. The same with the real
//! kube-apiserver is in `hosted_apiserver.rs`.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kqueen_core::hosted::supervisor::{Backoff, ProcessSpec, Supervisor, SupervisorEvent};
use kqueen_testkit::process::{alive, kill};
use tokio::sync::mpsc::UnboundedReceiver;

fn spec(dir: &std::path::Path, name: &str, binary: &str, args: &[&str]) -> ProcessSpec {
    ProcessSpec {
        name: name.into(),
        binary: binary.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        dir: dir.to_path_buf(),
        marker: dir.display().to_string(),
    }
}

async fn next(rx: &mut UnboundedReceiver<SupervisorEvent>) -> SupervisorEvent {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("an event within 10 s")
        .expect("the supervisor is alive")
}

#[tokio::test]
async fn a_dying_process_is_restarted_with_growing_pauses_and_its_log_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let backoff = Backoff {
        first: Duration::from_millis(50),
        max: Duration::from_millis(200),
        reset_after: Duration::from_secs(30),
    };
    let (sup, mut rx) = Supervisor::new(backoff);
    let crashing = spec(
        dir.path(),
        "crasher",
        "/bin/sh",
        &["-c", "echo boom: port in use; exit 3"],
    );
    sup.run("c1", vec![crashing.clone()]).await.unwrap();
    let mut pauses = Vec::new();
    assert!(matches!(
        next(&mut rx).await,
        SupervisorEvent::Started { .. }
    ));
    while pauses.len() < 4 {
        match next(&mut rx).await {
            SupervisorEvent::Exited {
                key,
                name,
                status,
                log_tail,
            } => {
                assert_eq!((key.as_str(), name.as_str()), ("c1", "crasher"));
                assert_eq!(status, "exited with status 3");
                assert!(log_tail.ends_with("boom: port in use"), "{log_tail}");
            }
            SupervisorEvent::Restarting { after, .. } => pauses.push(after.as_millis()),
            SupervisorEvent::Started { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(pauses, vec![50, 100, 200, 200]);
    sup.stop("c1").await;
    loop {
        if let SupervisorEvent::Stopped { name, .. } = next(&mut rx).await {
            assert_eq!(name, "crasher");
            break;
        }
    }
    assert!(!dir.path().join("crasher.pid").exists());
    assert!(sup.keys().is_empty());
}

#[tokio::test]
async fn released_processes_keep_running_and_are_adopted_restarted_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let backoff = Backoff {
        first: Duration::from_millis(50),
        ..Backoff::default()
    };
    // A shell loop whose command line names the directory (the marker), as a control
    // plane's name their files; it exits on SIGTERM.
    let marker = dir.path().display().to_string();
    let looping = |n: &str| {
        spec(
            dir.path(),
            "sleeper",
            "/bin/sh",
            &[
                "-c",
                &format!("trap 'exit 0' TERM; while :; do sleep 0.1; done # {n}"),
                &marker,
            ],
        )
    };
    let sleeper = looping("v1");
    let (first, mut rx1) = Supervisor::new(backoff);
    first.run("c1", vec![sleeper.clone()]).await.unwrap();
    let SupervisorEvent::Started { pid, .. } = next(&mut rx1).await else {
        panic!("not started")
    };
    assert_eq!(first.pids("c1")["sleeper"], pid);
    // KQueen goes away: the process stays.
    first.release("c1").await;
    drop(first);
    assert!(alive(pid));

    // The next KQueen adopts it instead of starting a second one.
    let (second, mut rx2) = Supervisor::new(backoff);
    second.run("c1", vec![sleeper.clone()]).await.unwrap();
    assert_eq!(
        next(&mut rx2).await,
        SupervisorEvent::Adopted {
            key: "c1".into(),
            name: "sleeper".into(),
            pid
        }
    );
    // An adopted process that dies is noticed and started again.
    kill(pid);
    let exited = next(&mut rx2).await;
    assert!(
        matches!(&exited, SupervisorEvent::Exited { status, .. } if status.contains("adopted")),
        "{exited:?}"
    );
    assert!(matches!(
        next(&mut rx2).await,
        SupervisorEvent::Restarting { .. }
    ));
    let SupervisorEvent::Started { pid: restarted, .. } = next(&mut rx2).await else {
        panic!("not restarted")
    };
    assert_ne!(restarted, pid);
    assert!(alive(restarted));
    second.release("c1").await;

    // Another command line (an upgrade while KQueen was down): the old process is stopped
    // and the new one started.
    let upgraded = looping("v2");
    let (third, mut rx3) = Supervisor::new(backoff);
    third.run("c1", vec![upgraded]).await.unwrap();
    let SupervisorEvent::Started { pid: new, .. } = next(&mut rx3).await else {
        panic!("not started")
    };
    assert_ne!(new, restarted);
    assert!(!alive(restarted), "the old process was stopped");
    third.stop("c1").await;
    assert!(!alive(new));
    assert!(!dir.path().join("sleeper.pid").exists());
}

#[tokio::test]
async fn a_stale_pid_file_is_not_trusted_and_dropping_the_supervisor_stops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // Another process (not this control plane's: no marker on its command line) happens to
    // have the pid in the file, as after a reboot.
    // The same binary, as another cluster's API server would be.
    let mut stranger = std::process::Command::new("/bin/sh")
        .args(["-c", "sleep 30; :"])
        .spawn()
        .unwrap();
    std::fs::write(dir.path().join("worker.pid"), stranger.id().to_string()).unwrap();
    let (sup, mut rx) = Supervisor::new(Backoff::default());
    let worker = spec(
        dir.path(),
        "worker",
        "/bin/sh",
        &[
            "-c",
            "trap 'exit 0' TERM; while :; do sleep 0.1; done",
            &dir.path().display().to_string(),
        ],
    );
    sup.run("c9", vec![worker.clone()]).await.unwrap();
    let SupervisorEvent::Started { pid, .. } = next(&mut rx).await else {
        panic!("not started")
    };
    assert!(alive(stranger.id()), "the stranger was left alone");
    assert_ne!(pid, stranger.id());
    // Dropped without stop or release (KQueen shutting down): the process goes on.
    drop(sup);
    drop(rx);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(alive(pid));
    // A delete from another KQueen stops it by its pid file.
    let (other, _rx) = Supervisor::new(Backoff::default());
    other.stop_unsupervised(&[worker]).await;
    assert!(!alive(pid));
    stranger.kill().unwrap();
    stranger.wait().unwrap();
}
