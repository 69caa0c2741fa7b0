// Replacing a dead node from the cluster page, against a real kube-apiserver
// (testkit/examples/kube_apiserver.rs, v1.20.2). A `command` provider whose create command
// hands over the API server's kubeconfig and whose replace command notes $KQ_NODE_NAME in a
// file makes cluster `prod` of team-a. The test plays the kubelets: it creates Node objects
// through the API and sets their Ready condition through the status subresource (`alive-1`
// keeps reporting Ready, as a kubelet's heartbeat would, so that the node lifecycle controller
// leaves it Ready). After "Sync now" the inventory's Nodes table lists them: a member sees no
// "Replace…"; a tenant admin sees it on the nodes that are not Ready only. One of those turns
// Ready behind the page's back: confirming its replacement shows the 409 in the page and
// nothing runs. The other is confirmed (the step names the node and what happens), the
// replace-node operation runs in the server's engine, the timeline says the node was
// replaced, the replace command got its name, the Node is gone from the API server and, once
// the inventory is synced again, from the Nodes table. Once with JavaScript off and once on.
// Skipped, with the reason printed, without the Kubernetes binaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';
import { seedUser, addTemplate, addMember, requestCluster, waitForState } from '../support/portal.mjs';
import { startKubeApiserver, kubeApiserverSkip } from '../support/kube.mjs';

const MEMBER = { username: 'mira', password: 'a long enough password' };
const TENANT_ADMIN = { username: 'otto', password: 'another long password' };
const ALIVE = 'alive-1';
const skip = kubeApiserverSkip();
if (skip) console.log(`replace_node.test.mjs skipped: ${skip}`);

let kube;
let server;
let browser;
let clusterPath;
let work;
let heartbeat;
/** The nodes whose kubelet the test plays as alive (a fresh heartbeat every few seconds). */
const reporting = new Set();

/** Where the replace command notes the nodes it was run for. */
const replacedFile = () => join(work, 'replaced');
const replaced = () => {
  try { return readFileSync(replacedFile(), 'utf8').split('\n').filter(Boolean); } catch { return []; }
};

/** Sets node `name`'s Ready condition to `status` (True, False, Unknown) as a kubelet would. */
async function setReady(name, status) {
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const since = status === 'True' ? now : '2026-01-05T08:00:00Z';
  const condition = status === 'True'
    ? { type: 'Ready', status, reason: 'KubeletReady', message: 'kubelet is posting ready status' }
    : { type: 'Ready', status, reason: 'NodeStatusUnknown', message: 'Kubelet stopped posting node status.' };
  const body = { status: { conditions: [{ ...condition, lastHeartbeatTime: now, lastTransitionTime: since }] } };
  const res = await kube.api('PATCH', `/api/v1/nodes/${name}/status`, body, 'application/merge-patch+json');
  assert.equal(res.status, 200, `${name} Ready=${status}: ${JSON.stringify(res.body)}`);
  if (status === 'True') reporting.add(name); else reporting.delete(name);
}

/** Registers node `name` (a kubelet's first call), then its Ready condition. */
async function addNode(name, ready) {
  const res = await kube.api('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } });
  assert.equal(res.status, 201, `${name}: ${JSON.stringify(res.body)}`);
  await setReady(name, ready);
}

/** A Ready node's heartbeat: its condition's lastHeartbeatTime moves on, its transition stays. */
async function beat(name) {
  const got = await kube.api('GET', `/api/v1/nodes/${name}`);
  if (got.status !== 200 || !reporting.has(name)) return;
  const conditions = (got.body.status?.conditions ?? []).map((c) => (c.type === 'Ready'
    ? { ...c, status: 'True', lastHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }
    : c));
  await kube.api('PATCH', `/api/v1/nodes/${name}/status`, { status: { conditions } }, 'application/merge-patch+json');
}

before(async () => {
  if (skip) return;
  work = mkdtempSync(join(tmpdir(), 'kqueen-e2e-replace-'));
  kube = await startKubeApiserver();
  await addNode(ALIVE, 'True');
  // The node lifecycle controller marks a node that stops reporting Unknown after 40 s.
  heartbeat = setInterval(() => { for (const n of reporting) beat(n).catch(() => {}); }, 5000);
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(MEMBER), seedUser(TENANT_ADMIN)],
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  // The provider's form (JavaScript off), with its commands run through /bin/sh.
  await page.goto(`${server.url}/providers?kind=command`);
  await page.fill('#provider-name', 'lab');
  await page.fill('#f-create_command', `cp '${kube.kubeconfig}' "$KQ_KUBECONFIG"`);
  await page.fill('#f-replace_command', `echo "$KQ_NODE_NAME" >> '${replacedFile()}'`);
  await page.check('#f-shell');
  await submit(page, '#provider-submit');
  assert.equal(await page.locator('#provider-table tr[data-provider="lab"]').count(), 1,
    (await page.locator('#form-error').allTextContents()).join(' '));
  await addTemplate(page, server.url, { name: 'small', provider: 'lab', tenants: 'team-a' });
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await addMember(page, server.url, 'team-a', TENANT_ADMIN.username, 'admin');
  clusterPath = await requestCluster(page, server.url, { tenant: 'team-a', template: 'small', name: 'prod' });
  await waitForState(page, server.url, clusterPath, 'ready', { timeout: 60_000 });
  await close();
});

after(async () => {
  clearInterval(heartbeat);
  await browser?.close();
  await server?.stop();
  await kube?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Opens the cluster page (hydrated when JavaScript runs). */
async function open(page, js, query = '') {
  await page.goto(`${server.url}${clusterPath}${query}`);
  if (js) await page.waitForSelector('main[data-hydrated=true]');
}

/** The nodes the Nodes table lists, and those that offer "Replace…". */
const nodeRows = (page) => page.locator('#nodes tbody tr[data-node]').evaluateAll((rows) => rows.map((r) => r.dataset.node));
const replaceButtons = (page) => page.locator('#nodes .replace-node').evaluateAll((links) => links.map((l) => l.dataset.node).sort());

/** Presses "Sync now" and reloads until the Nodes table lists every one of `names`. */
async function syncUntilListed(page, js, names) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    await open(page, js);
    // Hydrated, the form posts in place: its answer comes before the next page is read.
    if (js) await Promise.all([page.waitForResponse((r) => r.url().includes('/sfn/sync_inventory')), page.click('#sync-now')]);
    else await submit(page, '#sync-now');
    await open(page, js);
    const listed = await nodeRows(page);
    if (names.every((n) => listed.includes(n))) return;
    assert.ok(Date.now() < deadline, `the Nodes table lists ${listed.join(', ')}, not ${names.join(', ')}`);
    await page.waitForTimeout(500);
  }
}

/** Clicks "Replace…" of node `name` and waits for its confirmation step. */
async function askToReplace(page, js, name) {
  const link = page.locator(`#nodes .replace-node[data-node="${name}"]`);
  if (js) await link.click();
  else await Promise.all([page.waitForNavigation(), link.click()]);
  await page.waitForSelector('#confirm-replace');
  assert.match(page.url(), new RegExp(`confirm=replace-node&name=${name}$`));
}

/** Confirms the step's replacement; resolves once the page it comes back to is shown. */
async function confirmReplace(page, js) {
  if (js) await Promise.all([page.waitForResponse((r) => r.url().includes('/sfn/replace_node')), page.click('#replace-submit')]);
  else await submit(page, '#replace-submit');
  await page.waitForFunction(() => !new URL(location.href).searchParams.has('confirm'));
}

for (const js of [false, true]) {
  test(`a tenant admin has a dead node replaced from the cluster page, a member cannot (JavaScript ${js ? 'on' : 'off'})`, { skip }, async () => {
    const [dead, late] = js ? ['dead-3', 'dead-4'] : ['dead-1', 'dead-2'];
    await addNode(dead, 'Unknown');
    await addNode(late, 'Unknown');
    const admin = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(admin.page, server.url, TENANT_ADMIN);
    await syncUntilListed(admin.page, js, [ALIVE, dead, late]);

    // A member sees the nodes, and no way to replace one (nor its confirmation step).
    const member = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(member.page, server.url, MEMBER);
    await open(member.page, js);
    assert.ok((await nodeRows(member.page)).includes(dead));
    assert.equal(await member.page.locator('.replace-node').count(), 0);
    await open(member.page, js, `?confirm=replace-node&name=${dead}`);
    assert.equal(await member.page.locator('#confirm-replace').count(), 0);
    assert.deepEqual(member.errors, []);
    await member.close();

    // The tenant admin: "Replace…" on the nodes that are not Ready, never on a Ready one.
    const { page, errors } = admin;
    await open(page, js);
    assert.deepEqual(await replaceButtons(page), [dead, late].sort());
    assert.equal(await page.locator(`#nodes tr[data-node="${ALIVE}"] .replace-node`).count(), 0);

    // A node that reports Ready again after the page was shown: the core asks the cluster,
    // answers 409, the page says so and nothing runs.
    await askToReplace(page, js, late);
    await setReady(late, 'True');
    await confirmReplace(page, js);
    await page.waitForSelector('#form-error');
    assert.equal(
      (await page.textContent('#form-error')).trim(),
      `node ${late} is Ready: only a node that is not Ready can be replaced`,
    );
    assert.equal((await kube.api('GET', `/api/v1/nodes/${late}`)).status, 200, `${late} is still there`);

    // The dead one: the step names it and says what happens; confirmed, the operation runs.
    await open(page, js);
    await askToReplace(page, js, dead);
    assert.equal((await page.textContent('#confirm-replace-heading')).trim(), `Replace node ${dead}?`);
    const step = await page.textContent('#confirm-replace');
    assert.match(step, new RegExp(`Node ${dead} is removed from the cluster; the provider brings a new machine in its place; its pods are rescheduled`));
    assert.match(await page.textContent('#confirm-replace-state'), /has not been Ready since 2026-01-05 08:00 UTC/);
    assert.equal(await page.getAttribute('#confirm-replace-cancel', 'href'), clusterPath);
    await confirmReplace(page, js);
    assert.equal(new URL(page.url()).pathname, clusterPath);
    assert.equal(await page.locator('#form-error').count(), 0, 'no error');
    assert.match(await page.textContent('#operations tbody tr:first-child'), /Node replacement/);

    // The engine runs it in the background; the page follows by itself when hydrated.
    const done = `Ready: node ${dead} replaced`;
    const timeline = () => page.locator('#timeline').textContent();
    if (js) {
      await page.waitForFunction((text) => document.querySelector('#timeline')?.textContent.includes(text), done, { timeout: 60_000 });
    } else {
      const deadline = Date.now() + 60_000;
      while (!(await timeline()).includes(done)) {
        assert.ok(Date.now() < deadline, `the timeline never said "${done}": ${await timeline()}`);
        await page.waitForTimeout(500);
        await open(page, js);
      }
    }
    assert.match(await timeline(), new RegExp(`removed node ${dead} \\(not Ready since 2026-01-05 08:00:00 UTC`));
    assert.equal(await page.locator('h1 [data-state]').getAttribute('data-state'), 'ready');
    const id = clusterPath.split('/').pop();
    const detail = await (await page.request.get(`${server.url}/api/v1/clusters/${id}`)).json();
    const op = detail.operations.find((o) => o.kind === 'replace-node' && o.target === dead);
    assert.equal(op?.state, 'succeeded', JSON.stringify(detail.operations));
    assert.equal(op.requested_by, TENANT_ADMIN.username);
    assert.ok(!detail.operations.some((o) => o.target === late), 'nothing was queued for the Ready node');

    assert.deepEqual(replaced().filter((n) => n === dead || n === late), [dead], 'the replace command ran for the dead node only');
    assert.equal((await kube.api('GET', `/api/v1/nodes/${dead}`)).status, 404, `${dead} is gone from the API server`);
    assert.equal((await kube.api('GET', `/api/v1/nodes/${ALIVE}`)).status, 200);
    // The engine has the inventory synced again once the cluster is Ready: the node leaves
    // the Nodes table.
    for (const deadline = Date.now() + 30_000; (await nodeRows(page)).includes(dead);) {
      assert.ok(Date.now() < deadline, `${dead} is still in the Nodes table`);
      await page.waitForTimeout(500);
      await open(page, js);
    }
    assert.ok((await nodeRows(page)).includes(ALIVE));
    assert.deepEqual(errors, []);
    await admin.close();
  });
}
