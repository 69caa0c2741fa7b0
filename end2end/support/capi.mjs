// A Cluster API management cluster for browser tests: testkit/examples/capi_lab.rs, the real
// kube-apiserver (v1.20.2 of ../shared/kube) with minimal Cluster API CRDs, a ClusterClass
// `quick-start` in namespace `default`, and a fake controller that moves every Cluster
// through its conditions (one stage a second), creates its Machines and writes its
// `<name>-kubeconfig` Secret (pointing at the same API server).
//
//   KQUEEN_CAPI_LAB             helper binary (default ../target/debug/examples/capi_lab)
//   KQUEEN_TEST_KUBE_APISERVER  kube-apiserver binary (`eval "$(bash ../shared/kube/install.sh)"`)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminApi, readKubeconfig } from './kube.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const helper = process.env.KQUEEN_CAPI_LAB ?? join(repo, 'target', 'debug', 'examples', 'capi_lab');

/** Why the Cluster API tests cannot run here, or false. */
export function capiLabSkip() {
  return process.env.KQUEEN_TEST_KUBE_APISERVER
    ? false
    : 'KQUEEN_TEST_KUBE_APISERVER is unset: run eval "$(bash ../shared/kube/install.sh)" for the Cluster API tests';
}

/**
 * Starts the lab in a temporary directory. Returns its URL, its admin kubeconfig (path and
 * text), `api(method, path, body, contentType)` as admin, `createCluster(name)` and `stop`;
 * or `{ skip }` with the reason the helper printed when it cannot run.
 */
export async function startCapiLab() {
  const dir = mkdtempSync(join(tmpdir(), 'kqueen-e2e-capi-'));
  const kubeconfig = join(dir, 'admin.kubeconfig');
  // Standard input is a pipe: when this process dies, it closes and the helper stops.
  const child = spawn(helper, [kubeconfig], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((ok) => child.once('exit', ok));
  const started = await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`capi lab did not start (${helper}): ${out}`)), 90_000);
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/capi lab listening on (https:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); ok({ url: m[1] }); }
      const s = out.match(/skipped: (.*)/);
      if (s) { clearTimeout(timer); ok({ skip: s[1].trim() }); }
    });
    child.once('error', (e) => { clearTimeout(timer); fail(new Error(`${helper}: ${e.message}; build it with 'make fakes'`)); });
    child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`capi_lab exited (${code}): ${out}; build it with 'make fakes'`)); });
  });
  if (started.skip) {
    await exited;
    rmSync(dir, { recursive: true, force: true });
    return { skip: started.skip };
  }
  const { url } = started;
  const text = readFileSync(kubeconfig, 'utf8');
  const { ca, token } = readKubeconfig(text);

  const api = adminApi(url, ca, token);

  return {
    url,
    ca,
    kubeconfig,
    kubeconfigText: text,
    api,
    /**
     * Creates a Cluster in namespace `default` directly, as someone else than KQueen would:
     * a managed topology of the lab's ClusterClass, one control plane machine and one worker.
     */
    async createCluster(name, version = 'v1.31.0') {
      const path = '/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters';
      const created = await api('POST', path, {
        apiVersion: 'cluster.x-k8s.io/v1beta2',
        kind: 'Cluster',
        metadata: { name, namespace: 'default' },
        spec: {
          topology: {
            classRef: { name: 'quick-start' },
            version,
            controlPlane: { replicas: 1 },
            workers: { machineDeployments: [{ class: 'default-worker', name: 'md-0', replicas: 1 }] },
          },
        },
      });
      if (created.status !== 201) throw new Error(`POST ${path}: ${created.status} ${JSON.stringify(created.body)}`);
      return created.body;
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
