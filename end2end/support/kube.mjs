// The real kube-apiserver (v1.20.2 of ../shared/kube, with etcd and kube-controller-manager
// but without the Deployment and ReplicaSet controllers) as a process for browser tests:
// testkit/examples/kube_apiserver.rs. Tests play the missing controllers by patching
// statuses through the API with the admin token.
//
//   KQUEEN_KUBE_APISERVER_HELPER  helper binary (default ../target/debug/examples/kube_apiserver)
//   KQUEEN_TEST_KUBE_APISERVER    kube-apiserver binary (`eval "$(bash ../shared/kube/install.sh)"`)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const helper = process.env.KQUEEN_KUBE_APISERVER_HELPER ?? join(repo, 'target', 'debug', 'examples', 'kube_apiserver');

/** Why tests of the real API server cannot run here, or false. */
export function kubeApiserverSkip() {
  return process.env.KQUEEN_TEST_KUBE_APISERVER
    ? false
    : 'KQUEEN_TEST_KUBE_APISERVER is unset: run eval "$(bash ../shared/kube/install.sh)" for the tests against a real kube-apiserver';
}

/** The server, CA (PEM) and token of an admin kubeconfig the helper wrote. */
export function readKubeconfig(text) {
  const field = (name) => {
    const m = text.match(new RegExp(`^\\s*${name}: (\\S+)$`, 'm'));
    if (!m) throw new Error(`kubeconfig without ${name}`);
    return m[1];
  };
  return {
    server: field('server'),
    ca: Buffer.from(field('certificate-authority-data'), 'base64').toString('utf8'),
    token: field('token'),
  };
}

/**
 * `api(method, path, body, contentType)`: one request to the API server at `url` (CA `ca`)
 * with a bearer `token`; resolves to { status, body } (body parsed when JSON).
 */
export function adminApi(url, ca, token) {
  return (method, path, body, contentType = 'application/json') => new Promise((ok, fail) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    if (payload !== undefined) Object.assign(headers, { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) });
    const req = request(new URL(path, url), { method, ca, headers, timeout: 10_000 }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { data += c; });
      res.on('end', () => {
        let parsed = data;
        try { parsed = JSON.parse(data); } catch { /* not JSON */ }
        ok({ status: res.statusCode, body: parsed });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', fail);
    req.end(payload);
  });
}

/**
 * Starts the helper in a temporary directory. Returns its URL, its admin kubeconfig (path and
 * text), `api(method, path, body, contentType)` as admin, `patchDeploymentStatus` and `stop`.
 */
export async function startKubeApiserver() {
  const dir = mkdtempSync(join(tmpdir(), 'kqueen-e2e-apiserver-'));
  const kubeconfig = join(dir, 'admin.kubeconfig');
  // Standard input is a pipe: when this process dies, it closes and the helper stops.
  const child = spawn(helper, [kubeconfig], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((ok) => child.once('exit', ok));
  const url = await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`kube-apiserver did not start (${helper}): ${out}`)), 90_000);
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/kube-apiserver listening on (https:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`kube_apiserver exited (${code}): ${out}; build it with 'make fakes'`)); });
  });
  const text = readFileSync(kubeconfig, 'utf8');
  const { ca, token } = readKubeconfig(text);

  const api = adminApi(url, ca, token);

  return {
    url,
    kubeconfig,
    kubeconfigText: text,
    api,
    /**
     * Plays the Deployment controller: `replicas` pods of Deployment `name` in `namespace`
     * are updated, ready and available for its current generation.
     */
    async patchDeploymentStatus(namespace, name, replicas) {
      const path = `/apis/apps/v1/namespaces/${namespace}/deployments/${name}`;
      const got = await api('GET', path);
      if (got.status !== 200) throw new Error(`GET ${path}: ${got.status} ${JSON.stringify(got.body)}`);
      const status = {
        observedGeneration: got.body.metadata.generation,
        replicas, updatedReplicas: replicas, readyReplicas: replicas, availableReplicas: replicas,
      };
      const patched = await api('PATCH', `${path}/status`, { status }, 'application/merge-patch+json');
      if (patched.status !== 200) throw new Error(`PATCH ${path}/status: ${patched.status} ${JSON.stringify(patched.body)}`);
    },
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
