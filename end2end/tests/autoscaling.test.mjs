// Autoscaling from the cluster page, against a real kube-apiserver (v1.20.2). A `command`
// provider whose create command hands over the API server's kubeconfig and whose scale
// command notes what it is asked makes cluster `web` of team-a (one node, which the test
// registers as its kubelet would); the server's autoscaling turn comes every second
// (KQUEEN_AUTOSCALE_INTERVAL_SECONDS). A member sees the section (off) and no form. The tenant
// admin's maximum beyond the node quota's room, and a maximum below the minimum, are refused
// with the reason in the page; then it is turned on, the page says with what, and the
// turns' decision ("at its minimum") and the node count chart (an accessible SVG) show up;
// it is changed, then turned off. Once with JavaScript off and once on. Skipped, with the
// reason printed, without the Kubernetes binaries.
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
const skip = kubeApiserverSkip();
if (skip) console.log(`autoscaling.test.mjs skipped: ${skip}`);

let kube;
let server;
let browser;
let clusterPath;
let work;

const scaled = () => {
  try { return readFileSync(join(work, 'scaled'), 'utf8').split('\n').filter(Boolean); } catch { return []; }
};

before(async () => {
  if (skip) return;
  work = mkdtempSync(join(tmpdir(), 'kqueen-e2e-autoscaling-'));
  kube = await startKubeApiserver();
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  let res = await kube.api('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'w-1' } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const room = { cpu: '2', memory: '4Gi', pods: '20' };
  res = await kube.api('PATCH', '/api/v1/nodes/w-1/status', {
    status: {
      capacity: room,
      allocatable: room,
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status', lastHeartbeatTime: now, lastTransitionTime: now }],
    },
  }, 'application/merge-patch+json');
  assert.equal(res.status, 200, JSON.stringify(res.body));
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(MEMBER), seedUser(TENANT_ADMIN)],
    env: { KQUEEN_AUTOSCALE_INTERVAL_SECONDS: '1' },
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(`${server.url}/providers?kind=command`);
  await page.fill('#provider-name', 'lab');
  await page.fill('#f-create_command', `cp '${kube.kubeconfig}' "$KQ_KUBECONFIG"`);
  await page.fill('#f-scale_command', `echo "$KQ_NODE_COUNT \${KQ_REMOVE_NODE:-}" >> '${join(work, 'scaled')}'`);
  await page.check('#f-shell');
  await submit(page, '#provider-submit');
  assert.equal(await page.locator('#provider-table tr[data-provider="lab"]').count(), 1,
    (await page.locator('#form-error').allTextContents()).join(' '));
  await addTemplate(page, server.url, { name: 'small', provider: 'lab', tenants: 'team-a' });
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await addMember(page, server.url, 'team-a', TENANT_ADMIN.username, 'admin');
  clusterPath = await requestCluster(page, server.url, { tenant: 'team-a', template: 'small', name: 'web' });
  await waitForState(page, server.url, clusterPath, 'ready', { timeout: 60_000 });
  // Room for three nodes in all: a tenant admin's maximum stays within it.
  await page.goto(`${server.url}/tenants/team-a`);
  await page.fill('#q-nodes', '3');
  await submit(page, '#quota-form button[type=submit]');
  assert.match(await page.textContent('#quota'), /of 3/);
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await kube?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Opens the cluster page (hydrated when JavaScript runs). */
async function open(page, js) {
  await page.goto(`${server.url}${clusterPath}`);
  if (js) await page.waitForSelector('main[data-hydrated=true]');
  await page.waitForSelector('#autoscaling-state');
}

/** Fills the section's form and submits it; resolves once the page it comes back to shows. */
async function save(page, js, { min, max, share = '50', after = '10' }) {
  await page.fill('#autoscaling-min', min);
  await page.fill('#autoscaling-max', max);
  await page.fill('#autoscaling-share', share);
  await page.fill('#autoscaling-after', after);
  if (js) await Promise.all([page.waitForResponse((r) => r.url().includes('/sfn/set_autoscaling')), page.click('#autoscaling-save')]);
  else await submit(page, '#autoscaling-save');
}

for (const js of [false, true]) {
  test(`a tenant admin turns autoscaling on within the quota, sees its decisions and chart, and turns it off (JavaScript ${js ? 'on' : 'off'})`, { skip }, async () => {
    // A member: the state, no form.
    const member = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(member.page, server.url, MEMBER);
    await open(member.page, js);
    assert.match(await member.page.textContent('#autoscaling-state'), /^Off: the node count changes only when someone scales the cluster\.$/);
    assert.equal(await member.page.locator('#autoscaling-form').count(), 0);
    assert.equal(await member.page.locator('#autoscaling-chart svg[role=img]').count(), 1);
    assert.deepEqual(member.errors, []);
    await member.close();

    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url, TENANT_ADMIN);
    await open(page, js);
    assert.equal((await page.textContent('#autoscaling-save')).trim(), 'Turn autoscaling on');

    // Refusals say why, in the page.
    await save(page, js, { min: '1', max: '5' });
    await page.waitForSelector('#form-error');
    assert.equal(
      (await page.textContent('#form-error')).trim(),
      "max_nodes: the tenant's node quota (3) leaves room for at most 3 nodes in this cluster; an operator can set more",
    );
    await open(page, js);
    await save(page, js, { min: '3', max: '2' });
    await page.waitForSelector('#form-error');
    assert.equal((await page.textContent('#form-error')).trim(), 'max_nodes: must be at least the minimum (3)');

    // On: the page says with what; the turns' decision comes, and the chart draws the count.
    await open(page, js);
    await save(page, js, { min: '1', max: '3', share: '40', after: '5' });
    await open(page, js);
    assert.equal(await page.locator('#form-error').count(), 0);
    assert.equal(
      (await page.textContent('#autoscaling-state')).trim(),
      "On: between 1 and 3 worker nodes (now 1). Pods the scheduler cannot place add nodes; a node whose pods request under 40% of its CPU and memory for 5 min is drained and removed. The tenant's node quota is never exceeded.",
    );
    for (const deadline = Date.now() + 30_000; ;) {
      // Read at once: an element the page does not have yet is read again after a reload.
      const now = async (selector) => ((await page.locator(selector).count()) ? page.locator(selector).textContent() : '');
      const decision = await now('#autoscaling-decision');
      const chart = await now('#autoscaling-chart desc');
      if (decision.includes('node w-1 is under 40% used, but the cluster is at its minimum of 1') && chart.includes('Worker nodes: 1 at')) break;
      assert.ok(Date.now() < deadline, `no decision or chart yet: ${decision} / ${chart}`);
      await page.waitForTimeout(500);
      await open(page, js);
    }
    assert.equal(await page.getAttribute('#autoscaling-chart svg', 'role'), 'img');

    // Changed, then off.
    await save(page, js, { min: '1', max: '2', share: '40', after: '5' });
    await open(page, js);
    assert.match(await page.textContent('#autoscaling-state'), /^On: between 1 and 2 worker nodes/);
    if (js) await Promise.all([page.waitForResponse((r) => r.url().includes('/sfn/disable_autoscaling')), page.click('#autoscaling-off')]);
    else await submit(page, '#autoscaling-off');
    await open(page, js);
    assert.match(await page.textContent('#autoscaling-state'), /^Off: /);
    assert.equal(await page.locator('#autoscaling-off').count(), 0);
    assert.deepEqual(scaled(), [], 'nothing needed scaling');
    assert.deepEqual(errors, []);
    await close();
  });
}
