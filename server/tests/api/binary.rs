//! The `kqueen` binary's contract: `serve` with KQUEEN_* variables logs its address, answers
//! /healthz and /readyz, and stops cleanly on SIGTERM; operator commands report errors.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

fn kqueen(data_dir: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kqueen"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KQUEEN_DATA_DIR", data_dir)
        .env("NO_COLOR", "1");
    cmd
}

#[tokio::test]
async fn serve_logs_its_address_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = kqueen(dir.path())
        .arg("serve")
        .env("KQUEEN_LISTEN", "127.0.0.1:0")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (lines, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut log = String::new();
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{log}"));
        log.push_str(&line);
        log.push('\n');
        if let Some(at) = line.find("listening on http://") {
            let addr = line[at + "listening on ".len()..]
                .split_whitespace()
                .next()
                .unwrap();
            break addr.to_owned();
        }
    };
    for path in ["/healthz", "/readyz"] {
        let res = reqwest::get(format!("{url}{path}")).await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
    }
    assert!(
        dir.path().join("kqueen.db").is_file(),
        "default SQLite database in the data dir"
    );

    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "exit status after SIGTERM: {status}");
    let rest: Vec<String> = rx.try_iter().collect();
    assert!(rest.iter().any(|l| l.contains("stopped")), "{rest:?}");
}

#[test]
fn tenant_commands_create_list_and_refuse_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = kqueen(dir.path())
        .args(["tenant", "create", "team-a", "--name", "Team A"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "created tenant team-a (Team A)"
    );

    let out = kqueen(dir.path())
        .args(["tenant", "create", "Team_B"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("slug: may contain only"),
        "{out:?}"
    );

    let out = kqueen(dir.path())
        .args(["tenant", "create", "team-a"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exists"),
        "{out:?}"
    );

    let out = kqueen(dir.path())
        .args(["tenant", "list"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("team-a\tTeam A\t"), "{stdout}");
}

#[test]
fn bad_configuration_is_reported_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let out = kqueen(dir.path())
        .arg("serve")
        .env("KQUEEN_LISTEN", "nowhere")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        err.contains("invalid configuration") && err.contains("listen"),
        "{err}"
    );

    let out = kqueen(dir.path())
        .arg("serve")
        .env("KQUEEN_DATABASE_URL", "mysql://user:pw-secret@db/kq")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("scheme 'mysql'") && !err.contains("pw-secret"),
        "{err}"
    );
}

#[test]
fn user_create_generates_or_reads_a_password() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let out = kqueen(dir.path())
        .args(["user", "create", "root", "--operator"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("created local operator root\npassword: "),
        "{stdout}"
    );
    assert!(stdout.lines().nth(1).unwrap().len() > "password: ".len() + 20);

    let mut child = kqueen(dir.path())
        .args(["user", "create", "ops", "--password-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"short\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("at least 12 characters"),
        "{out:?}"
    );

    let out = kqueen(dir.path())
        .args(["user", "create", "root"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exists"),
        "{out:?}"
    );
}
