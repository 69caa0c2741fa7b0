// Addons in the browser, against real kube-apiservers (testkit/examples/kube_apiserver.rs:
// v1.20.2 with etcd, without the Deployment controller and without kubelets): an operator
// offers an `import` template; a member imports a cluster with its kubeconfig (one API server
// per JavaScript mode, so that the two runs share nothing), sees every catalog addon on the
// cluster page, is refused a metrics-server install with a bad parameter (the form comes back
// as typed, the error at the field), installs it with 3 replicas and follows it: after the
// operation the honest state is `installing` (then `degraded`) with the reason naming
// `Deployment kube-system/metrics-server`, as no pod ever starts. The operator sees the row,
// the chart and the bulk form on /fleet/addons, and the built-in catalog on /addons; an
// ingress-nginx someone else installed shows as "present, unmanaged", with no toggle. The member
// removes the addon after the confirmation step and it is "not installed" again, its
// Deployment gone. Then an operator's own addon: a refused definition kept at its field, the
// member's install, a newer version offered, the operator's bulk upgrade with a result per
// cluster, and the old version deleted from the catalog after its confirmation step.
// JavaScript off (reloads) and on (the section follows by itself). Skipped, with the reason
// printed, without the Kubernetes binaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember, requestCluster, waitForState, assertFits, DOCUMENT_404 } from '../support/portal.mjs';
import { startKubeApiserver, kubeApiserverSkip } from '../support/kube.mjs';

const MEMBER = { username: 'mira', password: 'a long enough password' };
const ADDON = 'metrics-server';
const DEPLOYMENT = `/apis/apps/v1/namespaces/kube-system/deployments/${ADDON}`;
const skip = kubeApiserverSkip();
if (skip) console.log(`addons.test.mjs skipped: ${skip}`);

let server;
let browser;
/** Per mode: the API server and the cluster page's path. */
const clusters = {};

before(async () => {
  if (skip) return;
  const [off, on] = await Promise.all([startKubeApiserver(), startKubeApiserver()]);
  clusters.off = { kube: off, name: 'edge' };
  clusters.on = { kube: on, name: 'edge-js' };
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(MEMBER)],
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addProvider(page, server.url, { kind: 'import', name: 'existing' });
  await addTemplate(page, server.url, { name: 'bring-your-own', provider: 'existing', tenants: 'team-a' });
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await close();
  const member = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(member.page, server.url, MEMBER);
  for (const c of Object.values(clusters)) {
    c.path = await requestCluster(member.page, server.url, {
      tenant: 'team-a', template: 'bring-your-own', name: c.name, fields: { 'f-kubeconfig': c.kube.kubeconfigText },
    });
    await waitForState(member.page, server.url, c.path, 'ready', { timeout: 60_000 });
  }
  await member.close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await Promise.all(Object.values(clusters).map((c) => c.kube?.stop()));
});

/** Waits for the page to be interactive (JavaScript on) or does nothing (off). */
const settled = (page, js) => (js ? page.waitForSelector('main[data-hydrated=true]') : Promise.resolve());

const row = (page, name = ADDON) => page.locator(`#addon-table tr[data-addon="${name}"]`);
const stateOf = (page, name = ADDON) => row(page, name).locator('[data-state]').getAttribute('data-state');

/**
 * Waits until the addon's row satisfies `ok(state, reason)`: hydrated, without a reload (the
 * section reads itself again); without JavaScript, by reloading.
 */
async function waitForRow(page, js, ok, what) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    const state = await stateOf(page);
    const reason = await page.locator(`#addon-${ADDON}-reason`).allTextContents();
    if (ok(state, reason.join(' '))) return { state, reason: reason.join(' ') };
    assert.notEqual(state, 'failed', `${ADDON} failed: ${reason}`);
    assert.ok(Date.now() < deadline, `${ADDON} is ${state} (${reason}), not ${what}`);
    await new Promise((r) => setTimeout(r, 500));
    if (!js) {
      await page.reload();
      await page.locator('#addon-table').waitFor();
    }
  }
}

/** Creates the namespace `ingress-nginx` and a Deployment `ingress-nginx-controller` in it. */
async function unmanagedIngress(kube) {
  const ns = await kube.api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ingress-nginx' } });
  assert.ok([201, 409].includes(ns.status), JSON.stringify(ns.body));
  const labels = { app: 'ingress' };
  const d = await kube.api('POST', '/apis/apps/v1/namespaces/ingress-nginx/deployments', {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ingress-nginx-controller' },
    spec: { selector: { matchLabels: labels }, template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.9' }] } } },
  });
  assert.ok([201, 409].includes(d.status), JSON.stringify(d.body));
}

for (const js of [false, true]) {
  const mode = js ? 'JavaScript on' : 'JavaScript off';
  const key = js ? 'on' : 'off';

  test(`a member toggles metrics-server on a cluster and the operator sees it in the fleet (${mode})`, { skip }, async () => {
    const { kube, name: clusterName, path } = clusters[key];
    // Someone else's ingress-nginx (its controller's Deployment, without KQueen's labels).
    await unmanagedIngress(kube);
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url, MEMBER);
    await page.goto(server.url + path);
    await settled(page, js);
    await page.locator('#addon-table').waitFor({ timeout: 30_000 });
    assert.equal(await stateOf(page, 'ingress-nginx'), 'present_unmanaged');
    assert.equal((await page.locator('#addon-ingress-nginx-unmanaged').textContent()).trim(), 'present, unmanaged (installed without KQueen)');
    assert.equal(await page.locator('#addon-ingress-nginx-install').count(), 0, 'no toggle for what KQueen did not install');

    // Every catalog addon, none installed; the install form's inputs follow the parameters' types.
    const names = await page.locator('#addon-table tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.addon));
    for (const n of ['cert-manager', 'ingress-nginx', 'kubernetes-dashboard', ADDON]) assert.ok(names.includes(n), names.join(' '));
    assert.equal(await stateOf(page), 'not_installed');
    assert.equal((await row(page).locator('[data-state]').textContent()).trim(), 'Not installed');
    const replicas = `#addon-${ADDON}-p-replicas`;
    const resolution = `#addon-${ADDON}-p-metric_resolution`;
    assert.equal(await page.getAttribute(replicas, 'type'), 'number');
    assert.deepEqual([await page.getAttribute(replicas, 'min'), await page.getAttribute(replicas, 'max')], ['1', '5']);
    assert.equal(await page.getAttribute(resolution, 'pattern'), '[0-9]+s');
    assert.deepEqual(await page.locator(`#addon-${ADDON}-version option`).allTextContents(), ['0.7.2']);

    // A value the browser would refuse is sent anyway (the server decides): the form comes
    // back as typed, the error at its field.
    await page.fill(replicas, '3');
    await page.locator(resolution).evaluate((i) => i.removeAttribute('pattern'));
    await page.fill(resolution, 'fast');
    await page.click(`#addon-${ADDON}-install`);
    const error = page.locator(`#addon-${ADDON}-p-metric_resolution-error`);
    await error.waitFor({ timeout: 30_000 });
    assert.match(await error.textContent(), /\S/);
    assert.equal(await page.getAttribute(resolution, 'aria-invalid'), 'true');
    assert.equal(await page.inputValue(resolution), 'fast');
    assert.equal(await page.inputValue(replicas), '3');
    assert.equal(await stateOf(page), 'not_installed');

    // The install: a durable operation; then the honest state, as no kubelet runs a pod.
    await page.fill(resolution, '30s');
    await page.click(`#addon-${ADDON}-install`);
    const seen = await waitForRow(page, js, (s, r) => ['installing', 'degraded'].includes(s) && r.includes(`Deployment kube-system/${ADDON}`), 'installing with a reason');
    assert.match(seen.reason, /0\/3 available/);
    assert.equal((await row(page).locator('[data-state]').textContent()).trim(), seen.state === 'installing' ? 'Installing' : 'Degraded');
    assert.equal((await page.locator(`#addon-${ADDON}-installed`).textContent()).trim(), '0.7.2');
    const deployment = await kube.api('GET', DEPLOYMENT);
    assert.equal(deployment.status, 200);
    assert.equal(deployment.body.spec.replicas, 3);
    assert.ok(JSON.stringify(deployment.body.spec.template.spec.containers).includes('30s'), 'the parameter reached the Deployment');
    await page.reload();
    await settled(page, js);
    const ops = await page.locator('#operations tbody tr').allTextContents();
    assert.ok(ops.some((o) => o.includes('Addon install')), ops.join('\n'));

    // The operator: the fleet's row, its chart, the bulk form; the built-in catalog.
    const op = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(op.page, server.url);
    await op.page.goto(`${server.url}/fleet`);
    await settled(op.page, js);
    await Promise.all([op.page.waitForURL(/\/fleet\/addons/), op.page.click('nav.tabs a[href="/fleet/addons"]')]);
    await settled(op.page, js);
    const fleetRow = op.page.locator(`#fleet-addons tr[data-addon="${ADDON}"][data-cluster="${clusterName}"]`);
    await fleetRow.waitFor({ timeout: 30_000 });
    const cells = await fleetRow.locator('th, td').allTextContents();
    assert.deepEqual(cells.slice(0, 4).map((c) => c.trim()), [ADDON, '0.7.2', 'team-a', clusterName]);
    assert.equal(await fleetRow.locator(`a[href="${path}"]`).count(), 1);
    assert.equal(await op.page.locator('#chart-addon-versions svg').count(), 1);
    const counted = op.page.locator(`#addon-version-counts tr[data-addon="${ADDON}"][data-version="0.7.2"] td`);
    assert.equal((await counted.last().textContent()).trim(), '1');
    await op.page.selectOption('#bulk-addon', ADDON);
    await Promise.all([op.page.waitForURL(/addon=metrics-server/), op.page.click('#addon-bulk-choose button')]);
    await op.page.locator('#bulk-version').waitFor();
    assert.equal(await op.page.locator('#bulk-none').count(), 1, 'every cluster runs the newest version');
    await op.page.goto(`${server.url}/addons`);
    await settled(op.page, js);
    const builtin = op.page.locator(`#addon-catalog tr[data-addon="${ADDON}"][data-version="0.7.2"]`);
    assert.equal(await builtin.getAttribute('data-builtin'), 'true');
    assert.equal(await op.page.locator('#addon-def-manifests').count(), 1);
    // The pages fit a phone.
    await op.page.setViewportSize({ width: 390, height: 844 });
    for (const at of ['/addons', `/fleet/addons?addon=${ADDON}`, path]) {
      await op.page.goto(server.url + at);
      await settled(op.page, js);
      await assertFits(op.page, at);
    }
    assert.deepEqual(op.errors.filter((e) => e !== DOCUMENT_404), []);
    await op.close();

    // The removal, after its confirmation step; then it is not installed again.
    await Promise.all([page.waitForURL(/confirm=remove-addon/), page.click(`#addon-${ADDON}-remove`)]);
    await page.locator('#confirm-addon-remove').waitFor();
    await page.click('#confirm-addon-remove-submit');
    await page.waitForURL((u) => u.pathname === path && !u.search.includes('confirm'), { timeout: 30_000 });
    await page.locator('#addon-table').waitFor();
    await waitForRow(page, js, (s) => s === 'not_installed', 'not installed');
    assert.equal((await kube.api('GET', DEPLOYMENT)).status, 404);
    assert.equal(await page.locator(`#addon-${ADDON}-install`).count(), 1);
    // The timeline tells the story.
    await page.reload();
    await settled(page, js);
    const timeline = await page.locator('#timeline li').allTextContents();
    assert.ok(timeline.some((t) => t.includes(`Install of ${ADDON} 0.7.2`)), timeline.join('\n'));
    assert.ok(timeline.some((t) => t.includes(`Removal of ${ADDON}`)), timeline.join('\n'));
    assert.deepEqual(errors.filter((e) => e !== DOCUMENT_404), []);
    await close();
  });
}

/** An operator's own addon: one ConfigMap in `default`, its greeting a parameter. */
const demoManifests = (name, extra = '') => `apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}-settings
data:
  greeting: \${greeting}
${extra}`;

/** Fills the catalog's form and submits it. */
async function define(page, js, { name, version, parameters, manifests }) {
  await page.goto(`${server.url}/addons`);
  await settled(page, js);
  await page.fill('#addon-def-name', name);
  await page.fill('#addon-def-version', version);
  await page.fill('#addon-def-namespace', 'default');
  await page.fill('#addon-def-parameters', parameters);
  await page.fill('#addon-def-manifests', manifests);
  await page.click('#addon-def-submit');
}

for (const js of [false, true]) {
  const mode = js ? 'JavaScript on' : 'JavaScript off';
  const key = js ? 'on' : 'off';
  const demo = js ? 'demo-b' : 'demo-a';
  const params = '[{"name": "greeting", "type": "string", "default": "hello", "pattern": "^[a-z]+$"}]';

  test(`an operator adds an addon to the catalog and upgrades it on many clusters (${mode})`, { skip }, async () => {
    const { name: clusterName, path, kube } = clusters[key];
    const op = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(op.page, server.url);
    // Parameters that are not JSON come back at their field, with everything kept.
    await define(op.page, js, { name: demo, version: '1.0.0', parameters: '[{"name": ', manifests: demoManifests(demo) });
    await op.page.locator('#addon-def-parameters-error').waitFor({ timeout: 30_000 });
    assert.equal(await op.page.getAttribute('#addon-def-parameters', 'aria-invalid'), 'true');
    assert.equal(await op.page.inputValue('#addon-def-manifests'), demoManifests(demo));
    assert.equal(await op.page.inputValue('#addon-def-name'), demo);
    await define(op.page, js, { name: demo, version: '1.0.0', parameters: params, manifests: demoManifests(demo) });
    const defined = (v) => op.page.locator(`#addon-catalog tr[data-addon="${demo}"][data-version="${v}"]`);
    await defined('1.0.0').waitFor({ timeout: 30_000 });
    assert.equal(await defined('1.0.0').getAttribute('data-builtin'), 'false');

    // The member installs it; with no workload to wait for, it is healthy after the operation.
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url, MEMBER);
    await page.goto(server.url + path);
    await settled(page, js);
    await row(page, demo).waitFor({ timeout: 30_000 });
    await page.fill(`#addon-${demo}-p-greeting`, 'bonjour');
    await page.click(`#addon-${demo}-install`);
    const healthy = async (version) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const state = await stateOf(page, demo);
        const installed = (await page.locator(`#addon-${demo}-installed`).allTextContents()).join('');
        if (state === 'healthy' && installed.startsWith(version)) return installed;
        assert.ok(Date.now() < deadline, `${demo} is ${state} ${installed}, not healthy at ${version}`);
        await new Promise((r) => setTimeout(r, 500));
        await page.reload();
        await page.locator('#addon-table').waitFor();
      }
    };
    await healthy('1.0.0');
    const config = await kube.api('GET', `/api/v1/namespaces/default/configmaps/${demo}-settings`);
    assert.equal(config.body?.data?.greeting, 'bonjour');

    // A newer version: the member's page offers it, the operator upgrades every older cluster.
    await define(op.page, js, { name: demo, version: '1.1.0', parameters: params, manifests: demoManifests(demo, '  release: "1.1"\n') });
    await defined('1.1.0').waitFor({ timeout: 30_000 });
    await page.reload();
    await page.locator('#addon-table').waitFor();
    assert.match(await page.locator(`#addon-${demo}-installed`).textContent(), /upgrade to 1\.1\.0 available/);
    await op.page.goto(`${server.url}/fleet/addons?addon=${demo}`);
    await settled(op.page, js);
    const box = op.page.locator(`#bulk-clusters input[type=checkbox][data-cluster="${clusterName}"]`);
    await box.waitFor({ timeout: 30_000 });
    assert.equal(await box.isChecked(), true);
    assert.equal(await op.page.inputValue('#bulk-version'), '1.1.0');
    await op.page.click('#bulk-submit');
    const result = op.page.locator(`#bulk-result-table tr[data-cluster="${clusterName}"]`);
    await result.waitFor({ timeout: 30_000 });
    assert.equal(await result.getAttribute('data-queued'), 'true', await result.textContent());
    await healthy('1.1.0');
    const upgraded = await kube.api('GET', `/api/v1/namespaces/default/configmaps/${demo}-settings`);
    assert.deepEqual(upgraded.body?.data, { greeting: 'bonjour', release: '1.1' });

    // The version no cluster runs any more leaves the catalog, after the confirmation step.
    await op.page.goto(`${server.url}/addons`);
    await settled(op.page, js);
    await Promise.all([op.page.waitForURL(/confirm=undefine/), op.page.click(`#addon-${demo}-1\\.0\\.0-delete`)]);
    await op.page.locator('#confirm-addon-undefine').waitFor();
    await op.page.click('#confirm-addon-undefine-submit');
    await op.page.waitForURL((u) => u.pathname === '/addons' && !u.search.includes('confirm'), { timeout: 30_000 });
    await defined('1.1.0').waitFor();
    // With JavaScript the URL changes before the catalog's data is read again: wait for it.
    await defined('1.0.0').waitFor({ state: 'detached', timeout: 30_000 });
    assert.equal(await defined('1.0.0').count(), 0);
    assert.deepEqual(op.errors.filter((e) => e !== DOCUMENT_404), []);
    assert.deepEqual(errors.filter((e) => e !== DOCUMENT_404), []);
    await op.close();
    await close();
  });
}
