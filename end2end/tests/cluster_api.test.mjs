// Cluster API in the browser, on a lab management cluster (testkit/examples/capi_lab.rs: the
// real kube-apiserver with Cluster API's CRDs, a ClusterClass `quick-start` and a fake
// controller that moves every Cluster through its conditions): an operator defines a
// cluster-api provider and a template through the portal's forms; a tenant member requests a
// cluster, watches its conditions advance to Ready and downloads a kubeconfig the lab's API
// server answers; an operator lists the provider's existing clusters (one a management
// cluster is unreachable for, with the reason), adopts Clusters made directly in the lab
// into the tenant, with JavaScript off and on, and they reach Ready. Skipped, with the reason
// printed, without the Kubernetes binaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';
import { capiLabSkip, startCapiLab } from '../support/capi.mjs';

const MEMBER = { username: 'carla', password: 'a long enough password' };
const TENANT = 'team-c';
const EXISTING = '/providers/capi-lab/clusters';
let skip = capiLabSkip();
if (skip) console.log(`cluster_api.test.mjs skipped: ${skip}`);

let server;
let browser;
let lab;
let downloads;
// Filled as the story goes.
let requestedPath;

before(async () => {
  if (skip) return;
  lab = await startCapiLab();
  if (lab.skip) {
    skip = lab.skip;
    console.log(`cluster_api.test.mjs skipped: ${skip}`);
    return;
  }
  downloads = mkdtempSync(join(tmpdir(), 'kqueen-e2e-capi-'));
  server = await startServer({
    seed: [
      seedOperator,
      ['tenant', 'create', TENANT, '--name', 'Team Cluster API'],
      { args: ['user', 'create', MEMBER.username, '--password-stdin'], input: `${MEMBER.password}\n` },
    ],
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await lab?.stop?.();
  if (downloads) rmSync(downloads, { recursive: true, force: true });
});

/** GET `path` on a Kubernetes API server as `token`: { status, body }. */
function kubeGet(server, { ca, token }, path) {
  return new Promise((ok, fail) => {
    const req = request(new URL(path, server), { ca, headers: { authorization: `Bearer ${token}` }, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => ok({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', fail);
    req.end();
  });
}

/** Calls `probe` until `done(result)` or `ms` pass; returns the last result. */
async function until(probe, done, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const result = await probe();
    if (done(result) || Date.now() > deadline) return result;
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** The one cluster's server, CA and user token of a kubeconfig KQueen wrote. */
function parseKubeconfig(yaml) {
  const field = (name) => yaml.match(new RegExp(`^\\s*${name}:\\s*"?([^"\\s]+)"?\\s*$`, 'm'))?.[1];
  const caData = field('certificate-authority-data');
  return {
    server: field('server'),
    ca: caData && Buffer.from(caData, 'base64').toString('utf8'),
    token: field('token'),
  };
}

/** The cluster page's state, after reloading it until it is no longer coming up (JavaScript off). */
async function reloadUntilSettled(page, path, ms = 120_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    await page.goto(server.url + path);
    const state = await page.locator('[data-state]').first().getAttribute('data-state');
    if (['ready', 'error'].includes(state) || Date.now() > deadline) return state;
    await page.waitForTimeout(1000);
  }
}

/** The cluster page's steps and timeline, one line each. */
async function story(page) {
  return [
    ...(await page.locator('#step-list li').allTextContents()),
    ...(await page.locator('#timeline li').allTextContents()),
  ];
}

test('an operator defines a Cluster API provider, a template and the tenant membership (JavaScript off)', { skip }, async (t) => {
  if (!server) return t.skip(skip);
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/providers');
  assert.match(await page.locator('#kind option[value=cluster-api]').textContent(), /Cluster API/);
  await page.goto(server.url + '/providers?kind=cluster-api');
  await page.fill('#provider-name', 'capi-lab');
  await page.fill('#provider-description', 'The lab management cluster');
  await page.fill('#f-management_kubeconfig', lab.kubeconfigText);
  await page.fill('#f-cluster_class', 'quick-start');
  assert.equal(await page.inputValue('#f-namespace'), 'default');
  await submit(page, '#provider-submit');
  assert.equal(await page.locator('#form-error').count(), 0, await page.locator('#form-error').allTextContents().then((t) => t.join()));
  const row = page.locator('#provider-table tbody tr[data-provider=capi-lab]');
  assert.equal(await row.locator('td').nth(1).textContent(), 'cluster-api');
  assert.match(await row.locator('td').nth(3).textContent(), /management_kubeconfig/);
  assert.ok(!(await page.content()).includes(lab.kubeconfigText.match(/token: (\S+)/)[1]), 'the admin token is not on the page');
  assert.equal(await row.locator('a', { hasText: 'Existing clusters' }).getAttribute('href'), EXISTING);

  await page.fill('#template-name', 'capi-small');
  await page.selectOption('#template-provider', 'capi-lab');
  await page.fill('#r-kubernetes_version-choices', 'v1.30.0, v1.31.0');
  await page.fill('#template-tenants', TENANT);
  await submit(page, '#template-submit');
  assert.equal(await page.locator('#form-error').count(), 0, await page.locator('#form-error').allTextContents().then((t) => t.join()));
  assert.equal(await page.locator('#template-table tbody tr[data-template=capi-small] td').nth(1).textContent(), 'capi-lab (cluster-api)');

  await page.goto(server.url + `/tenants/${TENANT}`);
  await page.fill('#member-username', MEMBER.username);
  await submit(page, '#add-member button[type=submit]');
  assert.equal(await page.locator(`#member-table tbody tr[data-member=${MEMBER.username}]`).count(), 1);
  await close();
});

test('a member requests a Cluster API cluster, watches its conditions advance to Ready and downloads a working kubeconfig (JavaScript on)', { skip }, async (t) => {
  if (!server) return t.skip(skip);
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + '/clusters/new');
  await page.waitForSelector('main[data-hydrated=true]');
  await page.selectOption('#r-template', 'capi-small');
  await submit(page, '#choose-template button[type=submit]');
  await page.locator('#f-kubernetes_version option').first().waitFor({ state: 'attached' });
  assert.deepEqual(await page.locator('#f-kubernetes_version option').allTextContents(), ['v1.30.0', 'v1.31.0']);
  await page.fill('#p-name', 'alpha');
  await page.selectOption('#f-kubernetes_version', 'v1.31.0');
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click('#request-submit')]);
  requestedPath = new URL(page.url()).pathname;
  await page.waitForSelector('main[data-hydrated=true]');

  // The page follows the conditions by itself, without reloading.
  await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('[data-state]')?.dataset.state), null, { timeout: 120_000 });
  const lines = await story(page);
  assert.equal(await page.locator('[data-state]').first().getAttribute('data-state'), 'ready',
    `${await page.locator('#cluster-error').allTextContents()}\n${lines.join('\n')}`);
  for (const line of ['Provisioning the infrastructure', 'Condition InfrastructureReady is True', 'Condition ControlPlaneInitialized is True', 'Control plane available']) {
    assert.ok(lines.some((l) => l.includes(line)), `${line} in\n${lines.join('\n')}`);
  }
  // The Cluster is in the management cluster, with the version asked for.
  const clusters = await lab.api('GET', '/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters');
  assert.equal(clusters.status, 200, JSON.stringify(clusters.body));
  assert.ok(clusters.body.items.some((c) => c.spec.topology?.version === 'v1.31.0' && c.metadata.name.includes('alpha')),
    JSON.stringify(clusters.body.items.map((c) => c.metadata)));

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#kubeconfig-download')]);
  const file = join(downloads, `${MEMBER.username}.kubeconfig`);
  await download.saveAs(file);
  const yaml = readFileSync(file, 'utf8');
  assert.match(yaml, /^kind: Config$/m);
  const kubeconfig = parseKubeconfig(yaml);
  // The lab's Clusters all run on the lab's own API server.
  assert.equal(kubeconfig.server, lab.url, 'points at the cluster');
  assert.ok(kubeconfig.token, 'a token of its own');
  assert.ok(!yaml.includes(lab.kubeconfigText.match(/token: (\S+)/)[1]), 'not the admin token');
  // It works, with a member's rights (new RoleBindings may take a moment to count).
  const inDefault = await until(() => kubeGet(kubeconfig.server, kubeconfig, '/api/v1/namespaces/default/configmaps'), (r) => r.status === 200, 15_000);
  assert.equal(inDefault.status, 200, inDefault.body);
  const system = await kubeGet(kubeconfig.server, kubeconfig, '/api/v1/namespaces/kube-system/secrets');
  assert.equal(system.status, 403, system.body);
  assert.deepEqual(errors, []);
  await close();
});

test('an operator sees the existing clusters and adopts one into the tenant; it reaches Ready (JavaScript off)', { skip }, async (t) => {
  if (!server) return t.skip(skip);
  assert.ok(requestedPath, 'the previous test made a cluster');
  await lab.createCluster('legacy-a');
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);

  // A management cluster that does not answer: the page says so in words.
  await page.goto(server.url + '/providers?kind=cluster-api');
  await page.fill('#provider-name', 'capi-down');
  await page.fill('#f-management_kubeconfig', lab.kubeconfigText.replace(lab.url, 'https://127.0.0.1:1'));
  await page.fill('#f-cluster_class', 'quick-start');
  await submit(page, '#provider-submit');
  await page.goto(server.url + '/providers/capi-down/clusters');
  assert.match(await page.locator('#unlisted').textContent(), /cannot be listed/);

  await page.goto(server.url + '/providers');
  await submit(page, '#provider-table tr[data-provider=capi-lab] a:has-text("Existing clusters")');
  assert.equal(new URL(page.url()).pathname, EXISTING);
  const row = page.locator('#existing-table tr[data-reference="default/legacy-a"] td');
  assert.equal(await row.nth(1).textContent(), 'quick-start');
  assert.equal(await row.nth(2).textContent(), 'v1.31.0');
  // The member's cluster is one of them, already KQueen's.
  const held = await page.locator('#existing-table a.adopted').evaluateAll((links) => links.map((a) => a.getAttribute('href')));
  assert.deepEqual(held, [requestedPath]);

  // A name that is no DNS label is refused at its input, the form keeps what was chosen.
  const form = '.adopt[data-reference="default/legacy-a"]';
  assert.equal(await page.inputValue(`${form} input[name=name]`), 'legacy-a');
  await page.selectOption(`${form} select[name=tenant]`, TENANT);
  await page.selectOption(`${form} select[name=template]`, 'capi-small');
  await page.fill(`${form} input[name=name]`, 'Legacy_A');
  await submit(page, `${form} button[type=submit]`);
  assert.equal(new URL(page.url()).pathname, EXISTING);
  const name = page.locator(`${form} input[name=name]`);
  assert.equal(await name.getAttribute('aria-invalid'), 'true');
  const described = await name.getAttribute('aria-describedby');
  const errorId = described.split(' ').find((id) => id.endsWith('-error'));
  assert.ok((await page.locator(`#${errorId}`).textContent()).length > 0);
  assert.equal(await name.inputValue(), 'Legacy_A');

  await name.fill('legacy-a');
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click(`${form} button[type=submit]`)]);
  const adopted = new URL(page.url()).pathname;
  const state = await reloadUntilSettled(page, adopted);
  const lines = await story(page);
  assert.equal(state, 'ready', `${await page.locator('#cluster-error').allTextContents()}\n${lines.join('\n')}`);
  assert.ok(lines.some((l) => l.includes('Adopted by') && l.includes('default/legacy-a')), lines.join('\n'));
  assert.match(await page.locator('h1').textContent(), /legacy-a/);

  // Adopted now: no form any more, the row links to it.
  await page.goto(server.url + EXISTING);
  assert.equal(await page.locator(form).count(), 0);
  assert.equal(await page.locator('#existing-table tr[data-reference="default/legacy-a"] a.adopted').getAttribute('href'), adopted);
  await close();
});

test('an operator adopts an existing cluster in place and it reaches Ready (JavaScript on)', { skip }, async (t) => {
  if (!server) return t.skip(skip);
  await lab.createCluster('legacy-b');
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url);
  await page.goto(server.url + EXISTING);
  await page.waitForSelector('main[data-hydrated=true]');
  const form = '.adopt[data-reference="default/legacy-b"]';
  await page.selectOption(`${form} select[name=tenant]`, TENANT);
  await page.selectOption(`${form} select[name=template]`, 'capi-small');
  // Refused in place: the form comes back with the error at the name and the choices kept.
  await page.fill(`${form} input[name=name]`, 'Beta_B');
  await page.click(`${form} button[type=submit]`);
  const name = page.locator(`${form} input[name=name]`);
  await page.waitForFunction((sel) => document.querySelector(sel)?.getAttribute('aria-invalid') === 'true', `${form} input[name=name]`);
  assert.equal(new URL(page.url()).pathname, EXISTING);
  assert.equal(await name.inputValue(), 'Beta_B');
  assert.equal(await page.locator(`${form} select[name=tenant]`).inputValue(), TENANT);
  assert.equal(await page.locator(`${form} select[name=template]`).inputValue(), 'capi-small');
  await name.fill('beta');
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click(`${form} button[type=submit]`)]);
  await page.waitForSelector('main[data-hydrated=true]');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('[data-state]')?.dataset.state), null, { timeout: 120_000 });
  const lines = await story(page);
  assert.equal(await page.locator('[data-state]').first().getAttribute('data-state'), 'ready',
    `${await page.locator('#cluster-error').allTextContents()}\n${lines.join('\n')}`);
  assert.match(await page.locator('h1').textContent(), /beta/);
  assert.deepEqual(errors, []);
  await close();
});
