// Visibility in the browser: an operator imports a cluster (the fake Kubernetes API with a
// small synthetic workload), syncs its inventory from the cluster page and sees the nodes,
// workloads and server-drawn charts; the Fleet pages show the dashboard charts, the images,
// versions and findings, with exports; a member of another tenant sees none of it. On the
// way, the tenant's shared etcd quota is set as a size, with and without JavaScript.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { startServer, startFakeKube, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';

const BOB = { username: 'bob', password: 'another long password' };

let server;
let browser;
let fake;
let clusterPath;

before(async () => {
  fake = await startFakeKube(['--demo']);
  server = await startServer({
    seed: [
      seedOperator,
      ['tenant', 'create', 'team-a', '--name', 'Team Alpha'],
      ['tenant', 'create', 'team-b', '--name', 'Team Beta'],
      { args: ['user', 'create', BOB.username, '--password-stdin'], input: `${BOB.password}\n` },
    ],
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
});

/** The SVG of a chart figure: its accessible title and how many bars it draws. */
async function chart(page, id) {
  const svg = page.locator(`#${id} > svg[role=img]`);
  assert.equal(await svg.count(), 1, `${id} has one accessible svg`);
  return {
    title: await svg.locator('title').textContent(),
    desc: await svg.locator('desc').textContent(),
    rects: await svg.locator('rect').count(),
    visible: await svg.isVisible(),
  };
}

test('an operator imports a cluster, syncs it and reads its inventory (JavaScript off)', async () => {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/providers?kind=import');
  await page.fill('#provider-name', 'existing');
  await submit(page, '#provider-submit');
  await page.fill('#template-name', 'adopt');
  await page.selectOption('#template-provider', 'existing');
  await submit(page, '#template-submit');

  await page.goto(server.url + '/tenants/team-b');
  await page.fill('#member-username', BOB.username);
  await submit(page, '#add-member button[type=submit]');

  // The shared etcd quota is a size: garbage comes back as the error at that field, with the
  // other fields as typed; a size is kept and shown back exactly (so saving the form again
  // keeps it).
  await page.goto(server.url + '/tenants/team-a');
  await page.fill('#q-clusters', '7');
  await page.fill('#q-storage', '-5 MiB');
  await submit(page, '#quota-form button[type=submit]');
  assert.match(await page.locator('#q-storage-error').textContent(), /Must be a size such as 512 MiB/);
  assert.equal(await page.inputValue('#q-storage'), '-5 MiB');
  assert.equal(await page.inputValue('#q-clusters'), '7');
  await page.goto(server.url + '/tenants/team-a');
  await page.fill('#q-storage', '1.5 GiB');
  await submit(page, '#quota-form button[type=submit]');
  assert.equal(await page.locator('#form-error').count(), 0);
  assert.equal(await page.locator('#quota-storage').textContent(), '0 B of 1.5 GiB');
  assert.equal(await page.inputValue('#q-storage'), '1536 MiB');

  await page.goto(server.url + '/clusters/new?tenant=team-a&template=adopt');
  await page.fill('#p-name', 'demo');
  await page.fill('#f-kubeconfig', readFileSync(fake.kubeconfig, 'utf8'));
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click('#request-submit')]);
  clusterPath = new URL(page.url()).pathname;
  for (let i = 0; i < 100; i++) {
    if ((await page.locator('[data-state]').first().getAttribute('data-state')) === 'ready') break;
    await new Promise((r) => setTimeout(r, 200));
    await page.reload();
  }
  assert.equal(await page.locator('[data-state]').first().getAttribute('data-state'), 'ready');

  // Sync now: the page comes back with the stored inventory.
  await submit(page, '#sync-now');
  assert.equal(await page.locator('#form-error').count(), 0);
  assert.equal(await page.locator('#api-version').textContent(), 'v1.33.2');
  assert.notEqual(await page.locator('#last-sync').textContent(), 'never');
  assert.equal(await page.locator('#inventory-error').count(), 0);
  assert.match(await page.locator('#usage-source').textContent(), /metrics API/);

  const cpu = await chart(page, 'chart-cpu');
  assert.equal(cpu.title, 'CPU per node (used: metrics API)');
  assert.match(cpu.desc, /^node-00: capacity 8 cores, allocatable 7.8 cores, requested 1.(0|1)\d* cores, used 0.9 cores\./);
  // Background plus capacity, allocatable, requested and used for each of 3 nodes.
  assert.equal(cpu.rects, 1 + 3 * 4);
  assert.ok(cpu.visible);
  const memory = await chart(page, 'chart-memory');
  assert.match(memory.desc, /capacity 32 GiB/);
  const pods = await chart(page, 'chart-pods');
  assert.equal(pods.title, 'Pods per namespace and phase');
  assert.match(pods.desc, /kube-system: Running 2, Pending 0, Succeeded 1, Unknown 1, total 4\./);

  assert.equal(await page.locator('#nodes tbody tr').count(), 3);
  assert.match(await page.locator('#nodes tr[data-node=node-02]').textContent(), /NotReady/);
  // With the time it went (its Ready condition's last transition).
  assert.match(await page.locator('#nodes tr[data-node=node-02]').textContent(), /since \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  assert.equal(await page.locator('#namespaces details').count(), 4);
  const severities = await page.locator('#cluster-findings tbody tr td:first-child').allTextContents();
  assert.deepEqual(severities, ['high', 'high', 'medium', 'medium', 'medium'], 'most severe first');
  const findings = await page.locator('#cluster-findings').textContent();
  for (const check of ['privileged', 'latest-tag', 'node-not-ready']) assert.ok(findings.includes(check), check);
  await close();
});

test('the fleet dashboard draws its charts and lists what needs attention (JavaScript on)', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/clusters');
  await page.waitForSelector('main[data-hydrated=true]');
  await page.click('nav[aria-label=Main] a[href="/fleet"]');
  await page.waitForSelector('#chart-state svg');
  for (const [id, title] of [
    ['chart-state', 'Clusters by state'],
    ['chart-provider', 'Clusters by provider'],
    ['chart-version', 'Clusters by Kubernetes version'],
    ['chart-fleet-cpu', 'CPU of the fleet'],
    ['chart-fleet-memory', 'Memory of the fleet'],
  ]) {
    const c = await chart(page, id);
    assert.equal(c.title, title);
    assert.ok(c.visible, id);
  }
  assert.equal((await chart(page, 'chart-version')).desc, '1.33: clusters 1.');
  assert.match(await page.locator('#fleet-stats').textContent(), /2 \/ 3/);
  // What runs and what is offered, each said as such (the import template offers no version).
  assert.equal(await page.locator('#newest-running .stat-value').textContent(), 'v1.33.2');
  assert.equal(await page.locator('#newest-offered .stat-value').textContent(), 'none yet');
  assert.match(await page.locator('#newest-offered .stat-note').textContent(), /no template offers a version/);
  assert.ok(!(await page.locator('#fleet-stats').textContent()).includes('unknown'));
  assert.match(await page.locator('#attention tr[data-cluster=demo]').textContent(), /1 of 3 nodes not Ready since \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
  assert.equal(await page.locator('#attention-heading').textContent(), 'Needs attention (1)');
  // The cluster list comes a page at a time; or only the clusters needing attention, with why.
  assert.equal(await page.locator('#fleet-clusters-heading').textContent(), 'Clusters (1)');
  assert.equal(await page.locator('nav.pager .muted').textContent(), '1–1 of 1');
  await page.goto(server.url + '/fleet?attention=true');
  await page.waitForSelector('main[data-hydrated=true]');
  // Loaded directly, the charts stay as the server drew them once the page is hydrated (the
  // page's data script does not carry them); fetched after a click below, they are redrawn.
  assert.equal((await chart(page, 'chart-state')).title, 'Clusters by state');
  assert.ok((await chart(page, 'chart-fleet-cpu')).visible);
  assert.equal(await page.locator('#fleet-clusters-heading').textContent(), 'Clusters needing attention (1)');
  assert.ok((await page.locator('#fleet-clusters thead').textContent()).includes('Why'));
  assert.match(await page.locator('#fleet-clusters tr[data-cluster=demo]').textContent(), /1 of 3 nodes not Ready/);
  await page.click('#all-clusters');
  await page.waitForFunction(() => document.querySelector('#fleet-clusters-heading')?.textContent === 'Clusters (1)');
  assert.equal((await chart(page, 'chart-version')).desc, '1.33: clusters 1.');
  assert.ok(!(await page.locator('#fleet-clusters thead').textContent()).includes('Why'));
  // The same on a cluster's page: its inventory charts stay once hydrated.
  await page.goto(server.url + clusterPath);
  await page.waitForSelector('main[data-hydrated=true]');
  assert.ok((await chart(page, 'chart-cpu')).visible);
  assert.equal((await chart(page, 'chart-pods')).title, 'Pods per namespace and phase');
  await page.goto(server.url + '/fleet?offset=50');
  await page.waitForSelector('main[data-hydrated=true]');
  assert.equal(await page.locator('#fleet-clusters-heading').textContent(), 'Clusters (1)');
  assert.equal(await page.locator('#fleet-clusters').count(), 0);
  assert.match(await page.getAttribute('nav.pager a[rel=prev]', 'href'), /^\/fleet\?offset=0$/);
  await page.goto(server.url + '/fleet');
  await page.waitForSelector('main[data-hydrated=true]');
  // An imported cluster keeps nothing in the shared etcd: no etcd column, no etcd card.
  assert.equal(await page.locator('#fleet-storage').count(), 0);
  assert.ok(!(await page.locator('#fleet-clusters thead').textContent()).includes('Shared etcd'));

  // Hydrated, the quota form saves in place; a plain number is MiB.
  await page.goto(server.url + '/tenants/team-a');
  await page.waitForSelector('main[data-hydrated=true]');
  await page.fill('#q-storage', '512');
  await page.click('#quota-form button[type=submit]');
  await page.waitForFunction(() => document.querySelector('#quota-storage')?.textContent === '0 B of 512 MiB');
  await page.reload();
  assert.equal(await page.inputValue('#q-storage'), '512 MiB');
  await page.goto(server.url + '/fleet');
  await page.waitForSelector('main[data-hydrated=true]');

  // Images: a search, then where the image runs, then the same query as CSV.
  await page.click('.tabs a[href="/fleet/images"]');
  await page.waitForSelector('#images-filter');
  await page.fill('#f-q', 'nginx');
  await page.click('#images-filter button[type=submit]');
  await page.waitForFunction(() => document.querySelectorAll('#images tbody tr').length === 1);
  const row = page.locator('#images tbody tr').first();
  assert.match(await row.getAttribute('data-image'), /^docker\.io\/library\/nginx:1\.27@sha256:0+1$/);
  assert.match(await row.textContent(), /demo \(team-a\) · team-00 · Deployment\/app-000 · container main · 2 pod\(s\)/);
  const csv = await page.request.get(await page.getAttribute('#export-csv', 'href').then((h) => server.url + h));
  assert.equal(csv.status(), 200);
  const lines = (await csv.text()).trim().split('\n');
  assert.match(lines[0], /^image,/);
  assert.ok(lines.slice(1).every((l) => l.includes('nginx')), lines.join('\n'));

  await page.click('.tabs a[href="/fleet/versions"]');
  await page.waitForSelector('#versions');
  assert.equal(await page.locator('#versions tbody tr').count(), 3);

  await page.click('.tabs a[href="/fleet/findings"]');
  await page.waitForSelector('#chart-findings svg');
  assert.equal((await chart(page, 'chart-findings')).title, 'Findings by check and severity');
  const groups = await page.locator('#findings tbody').evaluateAll((b) => b.map((x) => x.dataset.severity));
  assert.deepEqual(groups, [...groups].sort((a, b) => ['high', 'medium', 'low'].indexOf(a) - ['high', 'medium', 'low'].indexOf(b)));
  assert.ok(groups.includes('high'));
  await page.selectOption('#f-severity', 'high');
  await page.click('#findings-filter button[type=submit]');
  await page.waitForFunction(() => [...document.querySelectorAll('#findings tbody')].every((b) => b.dataset.severity === 'high'));
  assert.deepEqual(errors, []);
  await close();
});

test('a member of another tenant sees none of it (JavaScript off)', async () => {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url, BOB);
  await page.goto(server.url + '/fleet/images?q=nginx');
  // A plain member's Fleet entry leads to the images, and no Dashboard tab is offered.
  assert.equal(await page.locator('nav[aria-label=Main] a[href="/fleet/images"]').count(), 1);
  assert.equal(await page.locator('nav[aria-label=Fleet] a[href="/fleet"]').count(), 0);
  assert.equal(await page.locator('#images').count(), 0);
  assert.match(await page.locator('main').textContent(), /No image matches/);
  await page.goto(server.url + '/fleet/findings');
  assert.match(await page.locator('#findings-heading').textContent(), /^0 finding/);
  await page.goto(server.url + '/fleet');
  assert.match(await page.locator('main .error').textContent(), /permission denied/);
  const csv = await page.request.get(server.url + '/api/v1/fleet/images?format=csv');
  assert.equal((await csv.text()).trim().split('\n').length, 1, 'the header only');
  await page.goto(server.url + clusterPath);
  assert.match(await page.locator('main').textContent(), /not found/);
  await close();
});
