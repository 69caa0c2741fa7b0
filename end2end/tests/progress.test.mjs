// The progress a member sees right after requesting a cluster is the step the installer is
// on, from its first report: on the cluster page, after a reload and in the API
// (GET /api/v1/clusters/{id}: the cluster's current step and the operation's), with
// JavaScript off and on. The provider's installer (written by this test into its temporary
// directory) reports a step and a percentage, notes the time, and waits until the test lets
// it go on; twice; then it hands over the fake Kubernetes API server's kubeconfig.
//
// The portal keeps its default lease (30 s, renewed every 10 s): only the engine's progress
// flush (every 0.5 s) can show a step within the deadlines below. A step saved only with the
// lease renewal, or only when the installer's call returns, fails this test.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, startFakeKube, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember, requestCluster, assertFits } from '../support/portal.mjs';

const MEMBER = { username: 'devon', password: 'a long enough password' };
const WAITING = 'Waiting for a worker';
// How long after the installer reported a step the API and a freshly loaded page may still
// show the one before (the flush is every 0.5 s; a loaded 2-core machine is slow), and the
// hydrated page, which reads the cluster again every 2 s.
const SAVED_WITHIN = 4000;
const LIVE_WITHIN = 7000;
// The installer's steps: what it prints, and what the pages must show while it waits there.
const STEPS = [
  { name: (cluster) => `Reserving machines for ${cluster}`, percent: 25 },
  { name: (cluster) => `Installing Kubernetes on ${cluster}`, percent: 70 },
];

let server;
let browser;
let fake;
let work;

/**
 * The installer: `stepper.sh DIR KUBECONFIG`. At each step it prints `::step` and
 * `::progress` (and a long log line, which the page must wrap), writes the time in
 * DIR/<cluster>.at-<n> and waits for DIR/<cluster>.go-<n> (two minutes at most).
 */
const STEPPER = `#!/bin/sh
set -eu
dir=$1
at() {
  date +%s%N > "$dir/$KQ_CLUSTER_NAME.at-$1.tmp"
  mv "$dir/$KQ_CLUSTER_NAME.at-$1.tmp" "$dir/$KQ_CLUSTER_NAME.at-$1"
}
hold() {
  i=0
  while [ ! -e "$dir/$KQ_CLUSTER_NAME.go-$1" ]; do
    i=$((i + 1))
    if [ "$i" -gt 2400 ]; then echo "nobody let step $1 go on" >&2; exit 1; fi
    sleep 0.05
  done
}
echo "::step Reserving machines for $KQ_CLUSTER_NAME"
echo "::progress ${STEPS[0].percent}"
echo "cached /var/cache/stepper/images/$(printf 'layer%.0s' $(seq 1 40)).tar"
at 1
hold 1
echo "::step Installing Kubernetes on $KQ_CLUSTER_NAME"
echo "::progress ${STEPS[1].percent}"
at 2
hold 2
cp "$2" "$KQ_KUBECONFIG"
echo "::progress 95"
`;

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'kqueen-e2e-progress-'));
  const stepper = join(work, 'stepper.sh');
  writeFileSync(stepper, STEPPER);
  chmodSync(stepper, 0o755);
  fake = await startFakeKube();
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(MEMBER)],
  });
  browser = await launchBrowser();

  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addProvider(page, server.url, { kind: 'command', name: 'stepper', settings: { create_command: `${stepper} ${work} ${fake.kubeconfig}` } });
  await addTemplate(page, server.url, { name: 'stepwise', provider: 'stepper', tenants: 'team-a' });
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await close();
});

after(async () => {
  // Let every installer still waiting finish (a failed test leaves them at a step).
  for (const cluster of ['steps-ssr', 'steps-js']) for (const n of [1, 2]) writeFileSync(join(work, `${cluster}.go-${n}`), '');
  await browser?.close();
  await server?.stop();
  fake?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** When the installer of `cluster` reached step `n` (ms since the epoch), or null. */
function reachedAt(cluster, n) {
  const file = join(work, `${cluster}.at-${n}`);
  return existsSync(file) ? Number(BigInt(readFileSync(file, 'utf8').trim()) / 1_000_000n) : null;
}

/** Lets the installer of `cluster` go on from step `n`. */
const release = (cluster, n) => writeFileSync(join(work, `${cluster}.go-${n}`), '');

/** What GET /api/v1/clusters/{id} says of the cluster and of its newest operation. */
async function fromApi(page, id) {
  const res = await page.request.get(`${server.url}/api/v1/clusters/${id}`);
  assert.equal(res.status(), 200, await res.text());
  const c = await res.json();
  const op = c.operations[0] ?? {};
  return { state: c.state, step: c.current_step, progress: c.progress, opStep: op.step, opProgress: op.progress, opState: op.state };
}

/** What the cluster page in `page` shows (as it is now: no reload). */
const fromPage = (page) => page.evaluate(() => ({
  state: document.querySelector('h1 [data-state]')?.dataset.state,
  step: document.querySelector('#current-step')?.textContent,
  percent: document.querySelector('#progress-percent')?.textContent,
  bar: document.querySelector('#progress-bar')?.value,
  steps: [...document.querySelectorAll('#step-list li')].map((li) => li.textContent),
}));

const apiShows = (a, step, percent) => a.state === 'provisioning' && a.step === step && a.progress === percent
  && a.opStep === step && a.opProgress === percent && a.opState === 'running';
const pageShows = (p, step, percent) => p.state === 'provisioning' && p.step === step && p.percent === `${percent}%`
  && p.bar === percent && p.steps.some((s) => s.endsWith(step));

/**
 * Reads `read()` until `shows(result)`; fails when that takes longer than `ms` after `since`,
 * or when a read made after the installer started says "Waiting for a worker" (a hydrated
 * page may still show what it read before, until its next read: `fresh` false). Returns how
 * long after `since` it showed.
 */
async function showsWithin(what, since, ms, read, shows, { fresh = true } = {}) {
  for (;;) {
    const result = await read();
    if (fresh) {
      assert.notEqual(result.step, WAITING, `${what}: "${WAITING}" while the installer runs`);
      assert.notEqual(result.opStep, WAITING, `${what}: the operation is "${WAITING}" while the installer runs`);
    }
    if (shows(result)) return Date.now() - since;
    assert.ok(Date.now() - since < ms, `${what}, ${ms} ms after the installer reported its step, shows ${JSON.stringify(result)}`);
    await sleep(100);
  }
}

/** Waits until the installer of `cluster` reaches step `n`; returns when (ms since the epoch). */
async function installerAt(cluster, n) {
  for (let i = 0; i < 600; i++) {
    const at = reachedAt(cluster, n);
    if (at) return at;
    await sleep(50);
  }
  assert.fail(`the installer of ${cluster} did not reach step ${n} in 30 s`);
}

/** Reloads `page` (waiting for it to hydrate when `js`) and reads it. */
async function reloaded(page, js) {
  await page.reload();
  if (js) await page.waitForSelector('main[data-hydrated=true]');
  return fromPage(page);
}

for (const js of [false, true]) {
  test(`right after a request the page and the API show the installer's step and percentage (JavaScript ${js ? 'on' : 'off'})`, async (t) => {
    const cluster = js ? 'steps-js' : 'steps-ssr';
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url, MEMBER);
    const path = await requestCluster(page, server.url, { tenant: 'team-a', template: 'stepwise', name: cluster });
    const id = path.split('/').pop();
    if (js) {
      await page.waitForSelector('main[data-hydrated=true]');
      // A hydrated page is at the new address before the cluster's data arrives (the
      // router navigates in place, the page's section loads after): wait for its heading.
      await page.waitForSelector('h1 [data-state]');
      await page.evaluate(() => { window.kqueenSameDocument = true; });
    }
    // Right after the request: the operation is there, its progress card too (a worker may
    // not have it yet: "Waiting for a worker" is true until the installer starts).
    const first = await fromPage(page);
    assert.equal(first.state, 'provisioning', JSON.stringify(first));
    assert.ok(first.step, 'the progress card shows a step');

    for (const [n, { name, percent }] of STEPS.entries()) {
      const step = name(cluster);
      const at = await installerAt(cluster, n + 1);
      // The API, and the page as loaded again, show the step soon after the installer
      // reported it (never "Waiting for a worker" once it runs).
      const api = await showsWithin('the API', at, SAVED_WITHIN, () => fromApi(page, id), (a) => apiShows(a, step, percent));
      let shown;
      if (js) {
        // The hydrated page gets there by itself, without a reload.
        shown = await showsWithin('the page', at, LIVE_WITHIN, () => fromPage(page), (p) => pageShows(p, step, percent), { fresh: false });
        assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'the page updated in place');
      } else {
        shown = await showsWithin('the reloaded page', at, SAVED_WITHIN, () => reloaded(page, js), (p) => pageShows(p, step, percent));
      }
      t.diagnostic(`step ${n + 1}: the API after ${api} ms, the page after ${shown} ms`);
      // While the installer waits there, every view agrees: the page and a reload of it, the
      // API; the steps so far in order; the long log line wraps on a phone.
      const live = await fromPage(page);
      assert.ok(pageShows(live, step, percent), JSON.stringify(live));
      const again = await reloaded(page, js);
      assert.ok(pageShows(again, step, percent), JSON.stringify(again));
      assert.deepEqual(again.steps.map((s) => STEPS.findIndex((x) => s.endsWith(x.name(cluster)))).filter((i) => i >= 0), [...Array(n + 1).keys()],
        again.steps.join('\n'));
      assert.ok(apiShows(await fromApi(page, id), step, percent));
      await page.setViewportSize({ width: 390, height: 844 });
      await assertFits(page, `${path} at step ${n + 1}`);
      await page.setViewportSize({ width: 1440, height: 900 });
      await assertFits(page, `${path} at step ${n + 1}`);
      if (js) await page.evaluate(() => { window.kqueenSameDocument = true; });
      release(cluster, n + 1);
    }

    // Then Ready: the hydrated page by itself, a reload, the API.
    if (js) {
      await page.waitForFunction(() => document.querySelector('h1 [data-state]')?.dataset.state === 'ready', null, { timeout: 30_000 });
      assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'the page updated in place');
    } else {
      for (let i = 0; (await fromPage(page)).state !== 'ready'; i++) {
        assert.ok(i < 120, `still ${JSON.stringify(await fromPage(page))}`);
        await sleep(250);
        await reloaded(page, js);
      }
    }
    const ready = await reloaded(page, js);
    assert.equal(ready.state, 'ready');
    assert.equal(ready.step, undefined, 'no progress card once Ready');
    const api = await fromApi(page, id);
    assert.equal(api.state, 'ready');
    assert.equal(api.opState, 'succeeded');
    assert.equal(api.progress, 100);
    assert.deepEqual(errors, []);
    await close();
  });
}
