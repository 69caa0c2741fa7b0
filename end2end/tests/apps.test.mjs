// Applications in the browser, against a real kube-apiserver (testkit/examples/kube_apiserver.rs:
// v1.20.2 with etcd and kube-controller-manager, without the Deployment controller, which the
// test plays by patching a Deployment's status): an operator offers an `import` template; a
// member imports the cluster with its kubeconfig, deploys a version (ConfigMap, Service,
// Deployment) after a preview of three "created" objects, follows it to Deployed, sees the
// Deployment progressing and then available, previews a re-deploy whose only change is
// spec.replicas 1 → 2 and deploys it, is refused a ClusterRoleBinding at the manifests' field
// with everything kept, and deletes the version after the confirmation step. JavaScript off
// and on, each with its own application. Skipped, with the reason printed, without the
// Kubernetes binaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember, requestCluster, waitForState, DOCUMENT_404 } from '../support/portal.mjs';
import { startKubeApiserver, kubeApiserverSkip } from '../support/kube.mjs';

const MEMBER = { username: 'mira', password: 'a long enough password' };
const skip = kubeApiserverSkip();
if (skip) console.log(`apps.test.mjs skipped: ${skip}`);

let kube;
let server;
let browser;
let clusterPath;

/** The application's manifests: a ConfigMap, a Service and the Deployment `web`. */
function shop(replicas, extra = '') {
  return `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx:1.27
${extra}`;
}

const BINDING = `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: shop-admin
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-admin
subjects:
- kind: Group
  name: everyone
  apiGroup: rbac.authorization.k8s.io
`;

before(async () => {
  if (skip) return;
  kube = await startKubeApiserver();
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
  // The member imports the real cluster with its kubeconfig.
  const member = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(member.page, server.url, MEMBER);
  clusterPath = await requestCluster(member.page, server.url, {
    tenant: 'team-a', template: 'bring-your-own', name: 'prod', fields: { 'f-kubeconfig': kube.kubeconfigText },
  });
  await waitForState(member.page, server.url, clusterPath, 'ready', { timeout: 60_000 });
  await member.close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await kube?.stop();
});

/** Waits for the page to be interactive (JavaScript on) or does nothing (off). */
const settled = (page, js) => (js ? page.waitForSelector('main[data-hydrated=true]') : Promise.resolve());

/** Clicks `selector` and waits for a URL matching `url` (a post and its redirect, or the router). */
async function go(page, selector, url) {
  await Promise.all([page.waitForURL(url, { timeout: 30_000 }), page.click(selector)]);
}

/** Fills the deploy form and previews. */
async function preview(page, js, { name, version, manifests }) {
  await page.goto(`${server.url}${clusterPath}/apps/new`);
  await settled(page, js);
  await page.fill('#app-name', name);
  await page.fill('#app-version', version);
  await page.fill('#app-manifests', manifests);
  await page.click('#app-preview');
}

/** The preview's rows: `Kind name` → change. */
const changes = (page) => page.locator('#app-diff > tbody > tr').evaluateAll(
  (rows) => Object.fromEntries(rows.map((r) => [`${r.dataset.kind} ${r.dataset.name}`, r.dataset.change])),
);

/** Reloads the version's page until its state is `state` (JavaScript on: it follows by itself). */
async function waitForAppState(page, js, state) {
  if (js) {
    await page.waitForFunction((s) => document.querySelector('[data-app-state]')?.dataset.appState === s, state, { timeout: 60_000 });
    return;
  }
  const deadline = Date.now() + 60_000;
  for (;;) {
    const now = await page.locator('h1 [data-app-state]').getAttribute('data-app-state');
    if (now === state) return;
    assert.notEqual(now, 'failed', (await page.locator('#app-error').allTextContents()).join(' '));
    assert.ok(Date.now() < deadline, `the version is still ${now}, not ${state}`);
    await new Promise((r) => setTimeout(r, 500));
    await page.reload();
  }
}

for (const js of [false, true]) {
  const mode = js ? 'JavaScript on' : 'JavaScript off';
  const name = js ? 'shop-js' : 'shop';
  const version = '1.0';
  const namespace = `${name}-1-0`;

  test(`a member previews, deploys, follows, re-deploys and deletes a version (${mode})`, { skip }, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url, MEMBER);

    // The cluster page lists the applications and leads to the deploy form.
    await page.goto(server.url + clusterPath);
    await settled(page, js);
    await page.locator('#apps-heading').waitFor();
    await go(page, '#deploy-app', /\/apps\/new$/);
    await settled(page, js);
    assert.equal(await page.getAttribute('#app-namespace', 'placeholder'), '<name>-<version>');
    // Hydrated, a file fills the manifests' field; without JavaScript there is only the field.
    if (js) {
      await page.setInputFiles('#app-file', { name: 'shop.yaml', mimeType: 'text/yaml', buffer: Buffer.from(shop(1)) });
      await page.waitForFunction(() => document.querySelector('#app-manifests').value.includes('kind: Deployment'));
      assert.equal(await page.inputValue('#app-manifests'), shop(1));
    } else {
      assert.equal(await page.locator('#app-file').count(), 0);
    }

    // Preview: three objects created, in a namespace the deploy makes, with the member's rights.
    await preview(page, js, { name, version, manifests: shop(1) });
    await page.waitForURL(/\/apps\/preview$/, { timeout: 30_000 });
    await page.locator('#app-diff').waitFor();
    assert.deepEqual(await changes(page), { 'ConfigMap settings': 'created', 'Service web': 'created', 'Deployment web': 'created' });
    assert.equal(await page.locator('#app-namespace-new').count(), 1);
    assert.equal((await page.locator('#app-preview-namespace code').textContent()).trim(), namespace);
    assert.match(await page.locator('#app-applied-as').textContent(), /\S/);
    // The manifests never travel in a URL.
    assert.doesNotMatch(page.url(), /apiVersion|manifests=/);

    // Deploy: the version's page follows it to Deployed; `web` waits for its controller.
    await go(page, '#app-deploy', /\/apps\/[0-9a-f-]{36}$/);
    const versionPath = new URL(page.url()).pathname;
    await settled(page, js);
    await waitForAppState(page, js, 'deployed');
    await page.reload();
    await settled(page, js);
    const rollout = () => page.locator('#app-workloads tr[data-workload=web] [data-rollout]').getAttribute('data-rollout');
    assert.equal(await rollout(), 'progressing');
    const objects = await page.locator('#app-objects li').allTextContents();
    assert.ok(objects.some((o) => o.includes(`Deployment ${namespace}/web`)), objects.join('\n'));

    // The test plays the Deployment controller: one pod, available.
    await kube.patchDeploymentStatus(namespace, 'web', 1);
    await page.reload();
    await settled(page, js);
    assert.equal(await rollout(), 'available');
    const cells = await page.locator('#app-workloads tr[data-workload=web] td').allTextContents();
    assert.deepEqual(cells.slice(0, 6), ['Deployment', 'web', '1', '1', '1', '1']);

    // The cluster page lists the version.
    await page.goto(server.url + clusterPath);
    await settled(page, js);
    const row = page.locator(`#app-table tr[data-app="${name}"][data-version="${version}"]`);
    await row.waitFor();
    assert.match(await row.textContent(), new RegExp(namespace));
    assert.equal(await row.locator('[data-app-state]').getAttribute('data-app-state'), 'deployed');

    // A re-deploy with two replicas changes only spec.replicas of `web`.
    await preview(page, js, { name, version, manifests: shop(2) });
    await page.waitForURL(/\/apps\/preview$/, { timeout: 30_000 });
    await page.locator('#app-diff').waitFor();
    assert.deepEqual(await changes(page), { 'ConfigMap settings': 'unchanged', 'Service web': 'unchanged', 'Deployment web': 'changed' });
    assert.equal(await page.locator('#app-namespace-new').count(), 0);
    const replicas = page.locator('#app-diff tr[data-name=web][data-change=changed] tr[data-path="spec.replicas"]');
    assert.equal((await replicas.locator('.app-before').textContent()).trim(), '1');
    assert.equal((await replicas.locator('.app-after').textContent()).trim(), '2');
    await go(page, '#app-deploy', /\/apps\/[0-9a-f-]{36}$/);
    assert.equal(new URL(page.url()).pathname, versionPath, 'the same version');
    await settled(page, js);
    await waitForAppState(page, js, 'deployed');

    // A ClusterRoleBinding is beyond a member's rights: the form comes back as typed, the
    // error at the manifests.
    const refused = shop(1, BINDING);
    await preview(page, js, { name, version: '1.1', manifests: refused });
    await page.locator('#app-manifests-error').waitFor({ timeout: 30_000 });
    assert.match(await page.locator('#app-manifests-error').textContent(), /ClusterRoleBinding shop-admin/);
    assert.equal(await page.getAttribute('#app-manifests', 'aria-invalid'), 'true');
    assert.equal(await page.inputValue('#app-manifests'), refused);
    assert.equal(await page.inputValue('#app-name'), name);
    assert.equal(await page.inputValue('#app-version'), '1.1');
    assert.doesNotMatch(page.url(), /apiVersion|manifests=/);

    // Delete, after the confirmation step.
    await page.goto(server.url + versionPath);
    await settled(page, js);
    await go(page, '#app-delete', /confirm=delete/);
    await page.locator('#confirm-app-delete').waitFor();
    await page.click('#confirm-app-delete-submit');
    await page.waitForURL((u) => u.pathname === versionPath && !u.search.includes('confirm'), { timeout: 30_000 });
    const deadline = Date.now() + 60_000;
    for (;;) {
      await page.goto(server.url + clusterPath);
      await settled(page, js);
      await page.locator('#apps-heading').waitFor();
      if ((await page.locator(`#app-table tr[data-app="${name}"]`).count()) === 0) break;
      assert.ok(Date.now() < deadline, 'the version is still listed');
      await new Promise((r) => setTimeout(r, 500));
    }
    const gone = await kube.api('GET', `/api/v1/namespaces/${namespace}`);
    assert.ok(gone.status === 404 || gone.body?.status?.phase === 'Terminating', `namespace ${namespace}: ${gone.status}`);
    // The timeline tells the story.
    const timeline = await page.locator('#timeline li').allTextContents();
    assert.ok(timeline.some((t) => t.includes(`Deploy of ${name} ${version} into namespace ${namespace}`)), timeline.join('\n'));
    assert.ok(timeline.some((t) => t.includes(`Removal of ${name} ${version}`)), timeline.join('\n'));
    assert.deepEqual(errors.filter((e) => e !== DOCUMENT_404), []);
    await close();
  });
}
