// Starts the real kqueen binary on a fresh SQLite database and drives Debian's Chromium.
//
//   KQUEEN_BIN        server binary (default ../target/debug/kqueen)
//   KQUEEN_SITE_ROOT  built site (default ../target/site)
//   CHROMIUM          browser executable (default /usr/bin/chromium)
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = process.env.KQUEEN_BIN ?? join(repo, 'target', 'debug', 'kqueen');
const siteRoot = process.env.KQUEEN_SITE_ROOT ?? join(repo, 'target', 'site');
const browserPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const fakeBin = process.env.KQUEEN_FAKE_KUBE ?? join(repo, 'target', 'debug', 'examples', 'fake_kube');

/**
 * Starts `kqueen serve` on 127.0.0.1:0 after running `kqueen <args>` for each seed command
 * (an entry is an argument list, or `{ args, input }` to feed standard input). `env` adds
 * variables for the server (single sign-on settings, say).
 */
export async function startServer({ seed = [], env: extraEnv = {} } = {}) {
  for (const p of [bin, join(siteRoot, 'pkg', 'kqueen.js')]) {
    if (!existsSync(p)) throw new Error(`${p} is missing: build with 'make site build' first`);
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'kqueen-e2e-'));
  const env = {
    ...process.env,
    KQUEEN_DATA_DIR: dataDir,
    KQUEEN_LISTEN: '127.0.0.1:0',
    KQUEEN_SITE_ROOT: siteRoot,
    NO_COLOR: '1',
    RUST_LOG: process.env.RUST_LOG ?? 'info',
  };
  delete env.KQUEEN_DATABASE_URL;
  for (const entry of seed) {
    const { args, input } = Array.isArray(entry) ? { args: entry, input: undefined } : entry;
    execFileSync(bin, args, { env, input, stdio: [input === undefined ? 'ignore' : 'pipe', 'ignore', 'inherit'] });
  }

  let log = '';
  const launch = async () => {
    const child = spawn(bin, ['serve'], { env: { ...env, ...extraEnv }, stdio: ['ignore', 'ignore', 'pipe'] });
    let mine = '';
    const url = await new Promise((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`server did not start:\n${mine}`)), 20_000);
      child.stderr.on('data', (chunk) => {
        log += chunk;
        mine += chunk;
        const m = mine.match(/listening on (http:\/\/[\d.]+:\d+)/);
        if (m) { clearTimeout(timer); ok(m[1]); }
      });
      child.on('exit', (code) => { clearTimeout(timer); fail(new Error(`server exited (${code}):\n${mine}`)); });
    });
    const ready = await fetch(`${url}/readyz`);
    if (ready.status !== 200) throw new Error(`/readyz answered ${ready.status}`);
    return { child, url };
  };
  const exited = (child) => new Promise((ok) => (child.exitCode !== null || child.signalCode !== null ? ok() : child.once('exit', ok)));
  let current = await launch();
  const server = {
    url: current.url,
    dataDir,
    log: () => log,
    /** Kills the process without warning (SIGKILL) and starts it again on the same data. */
    async crashAndRestart() {
      current.child.kill('SIGKILL');
      await exited(current.child);
      current = await launch();
      server.url = current.url;
      return server.url;
    },
    async stop() {
      current.child.kill('SIGTERM');
      await exited(current.child);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return server;
}

/**
 * Headless Chromium with the flags that work on these machines (playwright gives every launch
 * a fresh temporary profile of its own).
 */
export async function launchBrowser() {
  if (!existsSync(browserPath)) throw new Error(`${browserPath} is missing: run scripts/setup.sh test`);
  return chromium.launch({
    executablePath: browserPath,
    headless: true,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/** A page that records uncaught errors and console errors, to assert there are none. */
export async function newPage(browser, { javaScriptEnabled }) {
  const context = await browser.newContext({ javaScriptEnabled });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(`console: ${m.text()}`); });
  return { page, errors, close: () => context.close() };
}

/** The operator account tests seed with `kqueen user create`. */
export const OPERATOR = { username: 'admin', password: 'correct horse battery' };
export const seedOperator = { args: ['user', 'create', OPERATOR.username, '--operator', '--password-stdin'], input: `${OPERATOR.password}\n` };

/** Logs in through the local-account form (works with JavaScript on or off). */
/** Clicks `selector` and waits for the page it loads (a form post and its redirect). */
export async function submit(page, selector) {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

export async function loginLocal(page, url, { username, password } = OPERATOR) {
  await page.goto(url + '/');
  await page.waitForURL(/\/login\?next=/);
  await page.fill('#username', username);
  await page.fill('#password', password);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/login')), page.click('#local-login button[type=submit]')]);
}

/**
 * Starts the fake Kubernetes API server (testkit/examples/fake_kube.rs) in a temporary directory;
 * `args` such as ['--demo'] go to it. Returns its URL, its admin kubeconfig's path and `stop`.
 */
export async function startFakeKube(args = []) {
  const dir = mkdtempSync(join(tmpdir(), 'kqueen-e2e-kube-'));
  const kubeconfig = join(dir, 'admin.kubeconfig');
  const child = spawn(fakeBin, [kubeconfig, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((ok, fail) => {
    let out = '';
    const timer = setTimeout(() => fail(new Error(`fake kube did not start (${fakeBin}): ${out}`)), 20_000);
    child.stdout.on('data', (c) => {
      out += c;
      const m = out.match(/listening on (http:\/\/[\d.]+:\d+)/);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on('exit', (code) => fail(new Error(`fake kube exited (${code}); build it with 'make fakes'`)));
  });
  return {
    url,
    kubeconfig,
    dir,
    stop() {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
