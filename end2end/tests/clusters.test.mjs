// The whole cluster story in the browser: an operator defines a provider and a template; a
// tenant member requests a cluster, watches it provision (the page updates by itself), and
// downloads a per-user kubeconfig; a portal killed mid-way finishes the operation after a
// restart. The provider's installer is end2end/support/install.sh; the cluster's API is the
// fake Kubernetes API server (core/examples/fake_kube.rs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, startFakeKube, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const installer = join(repo, 'end2end', 'support', 'install.sh');
const MEMBER = { username: 'devon', password: 'a long enough password' };

let server;
let browser;
let fake;

before(async () => {
  fake = await startFakeKube();
  server = await startServer({
    seed: [
      seedOperator,
      ['tenant', 'create', 'team-a', '--name', 'Team Alpha'],
      { args: ['user', 'create', MEMBER.username, '--password-stdin'], input: `${MEMBER.password}\n` },
    ],
    // A dead worker's operations are taken over after 3 s instead of 30.
    env: { KQUEEN_LEASE_SECONDS: '3' },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
});

test('an operator defines a provider, a template and the tenant membership (JavaScript off)', async () => {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/providers?kind=command');
  await page.fill('#provider-name', 'lab');
  await page.fill('#provider-description', 'Lab installer');
  await page.fill('#f-create_command', `${installer} ${fake.kubeconfig} 2`);
  await submit(page, '#provider-submit');
  assert.equal(await page.locator('#provider-table tbody tr[data-provider=lab] td').nth(1).textContent(), 'command');

  await page.goto(server.url + '/providers?kind=command');
  await page.fill('#provider-name', 'slow-lab');
  await page.fill('#f-create_command', `${installer} ${fake.kubeconfig} 6`);
  await submit(page, '#provider-submit');

  // `small` keeps tenant admins to their namespaces (the default); `slow` gives them the
  // whole cluster.
  for (const [name, provider, access] of [['small', 'lab', null], ['slow', 'slow-lab', 'cluster-admin']]) {
    await page.fill('#template-name', name);
    await page.selectOption('#template-provider', provider);
    await page.fill('#r-node_count-max', '5');
    await page.fill('#r-node_count-default', '2');
    await page.fill('#template-tenants', 'team-a');
    if (access) await page.selectOption('#template-admin-access', access);
    await submit(page, '#template-submit');
  }
  assert.deepEqual(
    await page.locator('#template-table tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.template)),
    ['slow', 'small'],
  );
  assert.equal(await page.locator('#template-table tr[data-template=slow] td.admin-access').textContent(), 'cluster-admin');
  assert.match(await page.locator('#template-table tr[data-template=small] td.admin-access').textContent(), /namespaces/);
  // A refinement wider than the provider's is refused at its field, nothing is lost elsewhere.
  await page.fill('#template-name', 'broken');
  await page.fill('#r-node_count-max', '1000');
  await submit(page, '#template-submit');
  assert.match(await page.locator('#r-node_count-max-error').textContent(), /cannot be above 100/);
  assert.equal(await page.inputValue('#template-name'), 'broken');

  await page.goto(server.url + '/tenants/team-a');
  await page.fill('#member-username', MEMBER.username);
  await submit(page, '#add-member button[type=submit]');
  assert.equal(await page.locator('#member-table tbody tr[data-member=devon]').count(), 1);
  await close();
});

test('a member requests a cluster, watches it reach Ready and downloads a kubeconfig (JavaScript on)', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + '/clusters');
  await page.waitForSelector('main[data-hydrated=true]');
  await page.click('#request-cluster');
  await page.waitForURL(/\/clusters\/new/);
  await page.selectOption('#r-template', 'small');
  await submit(page, '#choose-template button[type=submit]');
  // The form is rendered from the template's schema: node_count with the template's range.
  assert.equal(await page.getAttribute('#f-node_count', 'max'), '5');
  assert.equal(await page.inputValue('#f-node_count'), '2');
  await page.fill('#p-name', 'web');
  await page.fill('#f-node_count', '3');
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click('#request-submit')]);
  await page.waitForSelector('main[data-hydrated=true]');

  // Progress shows and moves without reloading; the page reaches Ready by itself.
  await page.waitForSelector('#progress-bar');
  await page.waitForFunction(() => document.querySelector('[data-state]')?.dataset.state === 'ready', null, { timeout: 30_000 });
  const steps = await page.locator('#step-list li').allTextContents();
  assert.ok(steps.some((s) => s.includes('Preparing 3 machines for web')), steps.join('\n'));
  assert.ok(steps.some((s) => s.includes('Installing Kubernetes')), steps.join('\n'));
  assert.equal(await page.locator('#endpoint').textContent(), fake.url);
  // What tenant admins get here is on the page (the template `small` keeps them namespaced).
  assert.equal(await page.getAttribute('#cluster-admin-access', 'data-access'), 'namespaced');
  // The first sync ran by itself when the cluster became Ready (nobody pressed Sync now):
  // until it ends the page says so, then it shows when it read the cluster.
  for (let i = 0; ; i++) {
    const last = (await page.locator('#last-sync').textContent()).trim();
    if (!/first sync running|never/.test(last)) break;
    assert.ok(i < 40, `not synced after Ready: ${last}`);
    await page.waitForTimeout(250);
    await page.reload();
    await page.waitForSelector('main[data-hydrated=true]');
  }

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#kubeconfig-download')]);
  const file = join(fake.dir, 'devon.kubeconfig');
  await download.saveAs(file);
  const yaml = readFileSync(file, 'utf8');
  assert.match(yaml, /token: /);
  assert.ok(yaml.includes(fake.url), 'points at the cluster');
  assert.ok(!yaml.includes('fake-admin-token'), 'a personal credential, not the admin one');
  assert.deepEqual(errors, []);
  await close();
});

test('a portal killed mid-operation finishes it after a restart (JavaScript off)', async () => {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + '/clusters/new?tenant=team-a&template=slow');
  await page.fill('#p-name', 'batch');
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click('#request-submit')]);
  const clusterPath = new URL(page.url()).pathname;
  // Wait until the installer is running, then kill the portal without warning.
  for (let i = 0; i < 100; i++) {
    await page.reload();
    if ((await page.locator('#step-list li').count()) > 0) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(await page.locator('[data-state]').first().getAttribute('data-state'), 'provisioning');
  const url = await server.crashAndRestart();
  // Sessions live in the database: the member is still logged in after the restart.
  let state = '';
  for (let i = 0; i < 150 && state !== 'ready'; i++) {
    await page.goto(url + clusterPath);
    state = await page.locator('[data-state]').first().getAttribute('data-state');
    if (state !== 'ready') await new Promise((r) => setTimeout(r, 400));
  }
  assert.equal(state, 'ready');
  assert.equal(await page.getAttribute('#cluster-admin-access', 'data-access'), 'cluster-admin');
  const timeline = await page.locator('#timeline li').allTextContents();
  assert.ok(timeline.some((t) => /Resumed by worker/.test(t)), timeline.join('\n'));
  await close();
});
