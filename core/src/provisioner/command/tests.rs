//! Unit tests of the command provisioner.

use super::run::OutputState;
use super::*;
use crate::provisioner::Reporter;

#[test]
fn secret_environments_parse_without_quoting_values() {
    let env = parse_environment("# cloud\nAWS_KEY=a=b\r\n\n_X=\nTOKEN= spaced \n").expect("valid");
    assert_eq!(
        env,
        [
            ("AWS_KEY".to_owned(), "a=b".to_owned()),
            ("_X".to_owned(), String::new()),
            ("TOKEN".to_owned(), " spaced ".to_owned()),
        ]
    );
    for (bad, why) in [
        ("secret-value", "line 1 is not NAME=value"),
        ("ok=secret-value", "upper-case"),
        (
            "A=1\nKQ_TENANT=secret-value",
            "line 2: KQ_TENANT is set by KQueen",
        ),
        ("PATH=secret-value", "PATH is set by KQueen"),
        ("1A=secret-value", "upper-case"),
    ] {
        let e = parse_environment(bad).expect_err("refused");
        assert!(e.contains(why), "{bad}: {e}");
        assert!(!e.contains("secret-value"), "{e}");
    }
}

fn split(line: &str) -> Vec<String> {
    split_command_line(line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
}

#[test]
fn splits_like_a_shell_without_expanding() {
    assert_eq!(
        split("  kind  create\tcluster "),
        ["kind", "create", "cluster"]
    );
    assert_eq!(
        split(r#"echo '$HOME' "$HOME" $HOME ~ *"#),
        ["echo", "$HOME", "$HOME", "$HOME", "~", "*"]
    );
    assert_eq!(split(r#"a 'b c' "d e" f\ g"#), ["a", "b c", "d e", "f g"]);
    assert_eq!(split(r#"a"b"'c'd"#), ["abcd"]);
    assert_eq!(split(r#"x "" ''"#), ["x", "", ""]);
    assert_eq!(split(r#""a\"b\\c\$d\e""#), [r#"a"b\c$d\e"#]);
    assert_eq!(split(r"'a\b'"), [r"a\b"]);
    assert_eq!(split("a \\\nb"), ["a", "b"]);
    assert_eq!(split("a # comment\nb"), ["a", "b"]);
    assert_eq!(split("a#b"), ["a#b"]);
    assert_eq!(split("--set=k=v,w=\"x y\""), ["--set=k=v,w=x y"]);
    assert!(split("").is_empty());
    assert!(split("   ").is_empty());
    for bad in ["'open", "\"open", "trailing\\", "\"a\\"] {
        assert!(split_command_line(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn argv_checks_the_program() {
    assert_eq!(
        argv("/opt/kind create cluster", false).expect("absolute"),
        ["/opt/kind", "create", "cluster"]
    );
    assert!(
        argv("kind create", false).is_ok(),
        "a name looked up in PATH"
    );
    assert!(argv("bin/kind create", false).is_err(), "relative path");
    assert!(argv("'' create", false).is_err(), "empty program");
    assert!(argv("  ", false).is_err());
    assert!(
        argv("kind create | tee log", false).is_err(),
        "a pipe needs a shell"
    );
    assert!(
        argv("echo '|' \\>", false).is_ok(),
        "quoted operators are words"
    );
    assert_eq!(
        argv("kind create | tee log", true).expect("shell"),
        ["/bin/sh", "-c", "kind create | tee log"]
    );
    assert!(argv(" ", true).is_err());
}

#[test]
fn output_protocol() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let reporter = Reporter::new(tx);
    let mut out = OutputState::default();
    for (err, line) in [
        (false, "::step Machines"),
        (false, "::progress 40"),
        (false, "::progress 400"),
        (false, "::step "),
        (true, "oops"),
        (true, "  "),
        (false, "::progress 55%"),
    ] {
        out.handle(&reporter, err, line.to_owned());
    }
    drop(reporter);
    let mut got = Vec::new();
    while let Ok(r) = rx.try_recv() {
        got.push(r);
    }
    use crate::provisioner::Report;
    assert_eq!(
        got,
        [
            Report::Step("Machines".into()),
            Report::Progress(40),
            Report::Log("::progress 400".into()),
            Report::Log("::step ".into()),
            Report::Log("stderr: oops".into()),
            Report::Log("stderr:   ".into()),
            Report::Progress(55),
        ]
    );
    assert_eq!(out.last_stderr.as_deref(), Some("oops"));
}

#[test]
fn current_server_of_kubeconfigs() {
    let parse = |y: &str| kube::config::Kubeconfig::from_yaml(y).expect("yaml");
    let full = parse(
        "apiVersion: v1\nkind: Config\ncurrent-context: b\nclusters:\n\
         - name: a\n  cluster: {server: 'https://a:6443'}\n\
         - name: b\n  cluster: {server: 'https://b:6443'}\n\
         contexts:\n- name: a\n  context: {cluster: a, user: u}\n\
         - name: b\n  context: {cluster: b, user: u}\nusers: []\n",
    );
    assert_eq!(current_server(&full), Ok("https://b:6443".into()));
    let one = parse(
        "clusters:\n- name: a\n  cluster: {server: 'https://a:6443'}\n\
         contexts:\n- name: a\n  context: {cluster: a}\n",
    );
    assert_eq!(current_server(&one), Ok("https://a:6443".into()));
    assert!(current_server(&parse("kind: Config\n")).is_err());
    let dangling = parse("current-context: x\ncontexts:\n- name: x\n  context: {cluster: nope}\n");
    assert!(current_server(&dangling).is_err());
}

#[test]
fn replacing_nodes_needs_a_replace_command() {
    let p = CommandProvisioner::new(CommandOptions::default());
    let mut config = Params::new();
    config.insert("create_command".into(), "/bin/true".into());
    assert!(!p.capabilities_for(&config).replace_node);
    config.insert("replace_command".into(), "   ".into());
    assert!(!p.capabilities_for(&config).replace_node);
    config.insert("replace_command".into(), "/opt/replace --node".into());
    assert!(p.capabilities_for(&config).replace_node);
    assert!(p.check_provider(&config).is_ok());
    config.insert("replace_command".into(), "replace | tee log".into());
    let e = p.check_provider(&config).expect_err("a pipe needs a shell");
    assert_eq!(e.field, "replace_command");
}

#[tokio::test]
async fn the_replace_command_gets_the_node_and_refuses_what_is_not_a_node_name() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().join("seen");
    let mut ctx = OpContext::new("c1", "team-a", dir.path().join("work"));
    ctx.provider_config.insert("shell".into(), "true".into());
    ctx.provider_config.insert(
        "replace_command".into(),
        format!("echo \"$KQ_ACTION $KQ_NODE_NAME\" > '{}'", out.display()),
    );
    let p = CommandProvisioner::new(CommandOptions::default());
    let done = p.replace_node(&mut ctx, "worker-1").await.expect("ran");
    assert!(matches!(done, Step::Done(())));
    assert_eq!(
        std::fs::read_to_string(&out).expect("written").trim(),
        "replace-node worker-1"
    );
    let refused = p
        .replace_node(&mut ctx, "x; rm -rf /")
        .await
        .expect_err("not a node name");
    assert!(
        refused.to_string().contains("is not a node name"),
        "{refused}"
    );
    ctx.provider_config.remove("replace_command");
    assert!(p.replace_node(&mut ctx, "worker-1").await.is_err());
}
