# schemathesis hooks of scripts/api-fuzz.sh: values for the string formats the OpenAPI document
# gives provider settings that the provisioners check beyond their type (server/src/api/
# provider_schemas.rs, FORMATS). A JSON schema cannot say "a private key" or "a file on this
# host"; the document names the format, and these strategies generate real values of it, so
# that every body the fuzzer calls valid is valid. API_FUZZ_MATERIAL names a directory with a
# certificate and its key (cert.pem, key.pem) and a kubeconfig of the fake API server.
import os
from pathlib import Path

import schemathesis
from hypothesis import strategies as st

material = Path(os.environ["API_FUZZ_MATERIAL"])
cert = (material / "cert.pem").read_text()
key = (material / "key.pem").read_text()
kubeconfig = (material / "admin.kubeconfig").read_text()

names = st.from_regex(r"\A[a-z][a-z0-9-]{0,15}\Z")
upper = st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,15}\Z").filter(
    lambda n: not n.startswith("KQ_") and n not in ("PATH", "HOME")
)
words = st.from_regex(r"\A[A-Za-z0-9_.=:-]{1,12}\Z")

formats = {
    # A program (absolute or a bare name) and plain words: valid with and without a shell.
    "command-line": st.builds(
        lambda program, args: " ".join([program, *args]),
        st.sampled_from(["/bin/true", "true", "/usr/bin/env", "echo"]),
        st.lists(words, max_size=3),
    ),
    "env-lines": st.lists(
        st.one_of(
            st.builds(lambda n, v: f"{n}={v}", upper, words),
            st.just("# a comment"),
            st.just(""),
        ),
        max_size=4,
    ).map("\n".join),
    "http-url": st.builds(
        lambda scheme, host, path: f"{scheme}://{host}/{path}",
        st.sampled_from(["http", "https"]),
        st.sampled_from(["ci.example.test", "127.0.0.1:8080", "jenkins.example.test"]),
        st.sampled_from(["", "jenkins/", "ci"]),
    ),
    "job-path": st.lists(names, min_size=1, max_size=3).map("/".join),
    "artifact-path": st.lists(names, min_size=1, max_size=3).map("/".join),
    "user-name": names,
    "pem-certificates": st.just(cert),
    "pem-private-key": st.just(key),
    "kubeconfig": st.sampled_from([kubeconfig, ""]),
    "required-kubeconfig": st.just(kubeconfig),
    "cidr": st.sampled_from(["192.168.0.0/16", "10.128.0.0/12", "fd00::/108", ""]),
    "https-url-list": st.lists(
        st.sampled_from(["https://127.0.0.1:2379", "https://etcd-1.example.test:2379"]),
        min_size=1,
        max_size=3,
    ).map(",".join),
    "ip-address": st.sampled_from(["127.0.0.1", "10.0.0.5", "::1", ""]),
    # Files that exist on every host the fuzzer runs on.
    "hosted-binaries": st.sampled_from(
        ["1.33 /bin/sh /bin/sh /bin/sh", "1.33 /bin/sh /bin/sh /bin/sh\n1.34 /bin/true /bin/true /bin/true"]
    ),
    "hosted-images": st.sampled_from(
        [
            "1.33 registry.k8s.io/kube-apiserver:v1.33.2 registry.k8s.io/kube-controller-manager:v1.33.2",
            "v1.34 example.test/apiserver:1 example.test/cm@sha256:0 example.test/sched:1",
        ]
    ),
}

for name, strategy in formats.items():
    schemathesis.openapi.format(name, strategy)
