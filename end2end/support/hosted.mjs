// What the browser tests of hosted control planes need beside the portal: the shared etcd
// (testkit/examples/tls_etcd.rs), the real Kubernetes binaries, and a way to find and kill
// the control-plane processes a portal started (they outlive it by design).
//
//   KQUEEN_TLS_ETCD                    etcd helper (default ../target/debug/examples/tls_etcd)
//   KQUEEN_TEST_KUBE_APISERVER         kube-apiserver binary (`eval "$(bash ../shared/kube/install.sh)"`)
//   KQUEEN_TEST_KUBE_CONTROLLER_MANAGER  kube-controller-manager binary
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const etcdBin = process.env.KQUEEN_TLS_ETCD ?? join(repo, 'target', 'debug', 'examples', 'tls_etcd');

/** The binaries of the real control plane, or why the hosted tests cannot run. */
export function kubeBinaries() {
  const apiserver = process.env.KQUEEN_TEST_KUBE_APISERVER;
  const controllerManager = process.env.KQUEEN_TEST_KUBE_CONTROLLER_MANAGER;
  if (!apiserver || !controllerManager) {
    return {
      skip: 'KQUEEN_TEST_KUBE_APISERVER and KQUEEN_TEST_KUBE_CONTROLLER_MANAGER are unset: '
        + 'run eval "$(bash ../shared/kube/install.sh)" for the hosted control plane tests',
    };
  }
  return { apiserver, controllerManager, skip: false };
}

/**
 * Starts the TLS etcd helper in a temporary directory. Returns its endpoint, `settings` (the
 * hosted provider's etcd settings by name: endpoints and PEMs) and `stop`.
 */
export async function startTlsEtcd() {
  const dir = mkdtempSync(join(tmpdir(), 'kqueen-e2e-etcd-'));
  const file = join(dir, 'settings.json');
  // Standard input is a pipe: when this process dies, it closes and the helper stops etcd.
  const child = spawn(etcdBin, [file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((ok) => child.once('exit', ok));
  const endpoint = await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`tls etcd did not start (${etcdBin}): ${out}`)), 60_000);
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/tls etcd listening on (https:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.once('error', (e) => { clearTimeout(timer); fail(new Error(`${etcdBin}: ${e.message}; build it with 'make fakes'`)); });
    child.once('exit', (code) => { clearTimeout(timer); fail(new Error(`tls etcd exited (${code}); build it with 'make fakes'`)); });
  });
  return {
    endpoint,
    settings: JSON.parse(readFileSync(file, 'utf8')),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin.end();
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Live processes (not this one) whose command line contains `text`: [{ pid, cmdline }]. */
export function processesMentioning(text) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let cmdline;
    let state;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      state = readFileSync(`/proc/${entry}/stat`, 'utf8').split(')').pop().trim()[0];
    } catch {
      continue; // gone meanwhile
    }
    // A zombie has an empty command line and is no longer running.
    if (cmdline.includes(text) && state !== 'Z') found.push({ pid: Number(entry), cmdline });
  }
  return found;
}

/**
 * SIGKILL to every process whose command line contains `text` (a portal's data directory:
 * its control planes' files are under it). Returns what it killed.
 */
export function killProcessesMentioning(text) {
  const found = processesMentioning(text);
  for (const { pid } of found) {
    try { process.kill(pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
  }
  return found;
}
