// Hosted control planes in the browser, on the real kube-apiserver and
// kube-controller-manager (v1.20.2 of ../shared/kube) and a TLS etcd with auth on
// (testkit/examples/tls_etcd.rs): an operator defines a hosted provider and a template
// through the portal's forms; a tenant member requests a hosted cluster, watches it reach
// Ready, downloads a personal kubeconfig that works against the new API server, sees the
// `kubeadm join` command (its token and CA hash checked against the cluster), and deletes
// the cluster, which stops its processes; before that, an operator copies the cluster's key
// space and restores from that copy a ConfigMap the member deleted. Skipped, with the reason
// printed, without the Kubernetes binaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';
import { kubeBinaries, startTlsEtcd, processesMentioning, killProcessesMentioning } from '../support/hosted.mjs';
import { assertFits } from '../support/portal.mjs';

const MEMBER = { username: 'hana', password: 'a long enough password' };
const kube = kubeBinaries();
if (kube.skip) console.log(`hosted.test.mjs skipped: ${kube.skip}`);
const skip = kube.skip;

let server;
let browser;
let etcd;
let dataDir;
let downloads;
// Filled as the story goes.
let clusterPath;
let kubeconfig;

before(async () => {
  if (skip) return;
  downloads = mkdtempSync(join(tmpdir(), 'kqueen-e2e-hosted-'));
  etcd = await startTlsEtcd();
  server = await startServer({
    seed: [
      seedOperator,
      ['tenant', 'create', 'team-h', '--name', 'Team Hosted'],
      { args: ['user', 'create', MEMBER.username, '--password-stdin'], input: `${MEMBER.password}\n` },
    ],
  });
  dataDir = server.dataDir;
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  // Control planes outlive the portal by design: a test that failed before deleting its
  // cluster leaves them running. Their files are in the portal's data directory.
  if (dataDir) {
    for (const { pid, cmdline } of killProcessesMentioning(`${dataDir}/`)) {
      console.log(`killed a left-over control plane process ${pid}: ${cmdline.slice(0, 120)}`);
    }
  }
  await etcd?.stop();
  if (downloads) rmSync(downloads, { recursive: true, force: true });
});

/** GET `path` on a Kubernetes API server, as `token` or anonymously: { status, body }. */
function kubeGet(server, credentials, path) {
  return kubeCall(server, credentials, 'GET', path);
}

/** `method` `path` (with a JSON `body`) on a Kubernetes API server: { status, body }. */
function kubeCall(server, { ca, token }, method, path, body) {
  return new Promise((ok, fail) => {
    const headers = token ? { authorization: `Bearer ${token}` } : {};
    if (body) headers['content-type'] = 'application/json';
    const req = request(new URL(path, server), { ca, headers, method, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => ok({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', fail);
    req.end(body ? JSON.stringify(body) : undefined);
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

test('an operator defines a hosted provider, a template and the tenant membership (JavaScript off)', { skip }, async () => {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/providers?kind=hosted');
  await page.fill('#provider-name', 'shared-etcd');
  await page.fill('#provider-description', 'Control planes on the lab etcd');
  assert.equal(await page.inputValue('#f-runtime'), 'process');
  for (const [name, value] of Object.entries(etcd.settings)) await page.fill(`#f-${name}`, value);
  await page.fill('#f-versions', `1.20 ${kube.apiserver} ${kube.controllerManager}`);
  assert.equal(await page.inputValue('#f-address'), '127.0.0.1');
  await submit(page, '#provider-submit');
  assert.equal(await page.locator('#form-error').count(), 0, await page.locator('#form-error').allTextContents().then((t) => t.join()));
  const row = page.locator('#provider-table tbody tr[data-provider=shared-etcd] td');
  assert.equal(await row.nth(1).textContent(), 'hosted');
  assert.ok((await row.nth(2).textContent()).includes(etcd.endpoint), 'the settings name the etcd');
  // The keys went to the vault: listed as set, never shown.
  const secrets = await row.nth(3).textContent();
  assert.match(secrets, /etcd_client_ca_key/);
  assert.match(secrets, /etcd_admin_key/);
  assert.ok(!(await page.content()).includes('PRIVATE KEY'), 'no key on the page');

  // Tenants pick among the offered versions (one here); tenant admins own their clusters.
  await page.fill('#template-name', 'hosted-small');
  await page.selectOption('#template-provider', 'shared-etcd');
  await page.fill('#r-kubernetes_version-choices', '1.20');
  await page.fill('#template-tenants', 'team-h');
  await page.selectOption('#template-admin-access', 'cluster-admin');
  await submit(page, '#template-submit');
  assert.equal(await page.locator('#template-table tbody tr[data-template=hosted-small] td').nth(1).textContent(), 'shared-etcd (hosted)');

  await page.goto(server.url + '/tenants/team-h');
  await page.fill('#member-username', MEMBER.username);
  await submit(page, '#add-member button[type=submit]');
  assert.equal(await page.locator(`#member-table tbody tr[data-member=${MEMBER.username}]`).count(), 1);
  await close();
});

test('a member requests a hosted cluster, watches it reach Ready and downloads a working kubeconfig (JavaScript on)', { skip }, async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + '/clusters');
  await page.waitForSelector('main[data-hydrated=true]');
  await page.click('#request-cluster');
  await page.waitForURL(/\/clusters\/new/);
  await page.selectOption('#r-template', 'hosted-small');
  await submit(page, '#choose-template button[type=submit]');
  // The form is the template's: the version is a choice among what it offers (the step
  // renders in place: wait for it).
  await page.locator('#f-kubernetes_version option').first().waitFor({ state: 'attached' });
  assert.deepEqual(await page.locator('#f-kubernetes_version option').allTextContents(), ['1.20']);
  await page.fill('#p-name', 'edge');
  await page.selectOption('#f-kubernetes_version', '1.20');
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click('#request-submit')]);
  clusterPath = new URL(page.url()).pathname;
  await page.waitForSelector('main[data-hydrated=true]');

  // Progress shows and moves without reloading; the page reaches Ready by itself (the real
  // control plane takes some seconds to answer; a loaded machine, more).
  await page.waitForSelector('#progress-bar');
  await page.waitForFunction(() => ['ready', 'error'].includes(document.querySelector('[data-state]')?.dataset.state), null, { timeout: 120_000 });
  const steps = await page.locator('#step-list li').allTextContents();
  assert.equal(await page.locator('[data-state]').first().getAttribute('data-state'), 'ready',
    `${await page.locator('#cluster-error').allTextContents()}\n${steps.join('\n')}`);
  for (const step of ['Reserving the key space', "Generating the control plane's certificates", 'Starting kube-apiserver, kube-controller-manager and kube-scheduler']) {
    assert.ok(steps.some((s) => s.includes(step)), `${step} in\n${steps.join('\n')}`);
  }
  const endpoint = (await page.locator('#endpoint').textContent()).trim();
  assert.match(endpoint, /^https:\/\/127\.0\.0\.1:\d+$/);
  // The control plane runs from the portal's data directory.
  const id = clusterPath.split('/').pop();
  const running = processesMentioning(`${dataDir}/work/${id}/`).map((p) => p.cmdline);
  assert.ok(running.some((c) => c.startsWith(kube.apiserver)), running.join('\n'));
  assert.ok(running.some((c) => c.startsWith(kube.controllerManager)), running.join('\n'));

  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#kubeconfig-download')]);
  const file = join(downloads, `${MEMBER.username}.kubeconfig`);
  await download.saveAs(file);
  const yaml = readFileSync(file, 'utf8');
  assert.match(yaml, /^kind: Config$/m);
  kubeconfig = parseKubeconfig(yaml);
  assert.equal(kubeconfig.server, endpoint, 'points at the hosted API server');
  assert.ok(kubeconfig.token, 'a token of its own');
  assert.ok(!/client-key-data/.test(yaml), 'not the admin certificate');

  // It works against the API server, with a member's rights: edit in the tenant's
  // namespaces, nothing in kube-system. (Its RoleBindings are new: the API server's RBAC
  // cache may take a moment to see them.)
  const inDefault = await until(() => kubeGet(kubeconfig.server, kubeconfig, '/api/v1/namespaces/default/configmaps'), (r) => r.status === 200, 15_000);
  assert.equal(inDefault.status, 200, inDefault.body);
  const system = await kubeGet(kubeconfig.server, kubeconfig, '/api/v1/namespaces/kube-system/secrets');
  assert.equal(system.status, 403, system.body);
  const kubectl = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find(existsSync);
  if (kubectl) {
    const can = execFileSync(kubectl, ['--kubeconfig', file, '-n', 'default', 'auth', 'can-i', 'create', 'deployments.apps'], { encoding: 'utf8' });
    assert.equal(can.trim(), 'yes');
  }
  assert.deepEqual(errors, []);
  await close();
});

test("an operator copies the hosted cluster's key space and restores a deleted ConfigMap from it (JavaScript on)", { skip }, async () => {
  assert.ok(clusterPath && kubeconfig, 'the previous test made a Ready cluster');
  const menu = '/api/v1/namespaces/default/configmaps/menu';
  const made = await kubeCall(kubeconfig.server, kubeconfig, 'POST', '/api/v1/namespaces/default/configmaps',
    { metadata: { name: 'menu' }, data: { dish: 'soup' } });
  assert.equal(made.status, 201, made.body);
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url);
  await page.goto(server.url + clusterPath);
  await page.waitForSelector('main[data-hydrated=true]');
  // A hosted cluster offers the choice; resources stay the default.
  assert.equal(await page.isChecked('#backup-kind-resources'), true);
  await page.check('#backup-kind-key-space');
  await page.click('#take-backup');
  const headline = page.locator('[data-backup-kind=key_space]').first();
  await headline.waitFor({ timeout: 90_000 });
  assert.match(await headline.textContent(), /^Key space at etcd revision \d+: \d+ key\(s\), .+ in \d+ namespace\(s\); sealed in the vault$/);
  const row = page.locator('tr[data-backup]').filter({ has: headline });
  const id = await row.getAttribute('data-backup');

  const gone = await kubeCall(kubeconfig.server, kubeconfig, 'DELETE', menu);
  assert.equal(gone.status, 200, gone.body);
  await page.click(`[data-restore="${id}"]`);
  await page.waitForSelector('#restore-form');
  await page.waitForSelector('main[data-hydrated=true]');
  assert.match(await page.locator('#restore-whole').textContent(), /restored whole, into a hosted cluster/);
  assert.equal(await page.locator('#restore-form fieldset').isVisible(), false, 'no namespace to pick');
  await Promise.all([page.waitForURL(/plan=1/), page.click('#restore-preview')]);
  assert.match(await page.locator('#restore-summary').textContent(), /^Key space: [1-9]\d* key\(s\) to write, \d+ already equal, \d+ to remove\./);
  await Promise.all([page.waitForURL(new RegExp(`${clusterPath}$`), { timeout: 30_000 }), page.click('#restore-run')]);
  const back = await until(() => kubeGet(kubeconfig.server, kubeconfig, menu), (r) => r.status === 200, 60_000);
  assert.equal(back.status, 200, back.body);
  assert.equal(JSON.parse(back.body).data.dish, 'soup');

  // A schedule may copy the key space too.
  await page.waitForSelector('main[data-hydrated=true]');
  await page.fill('#schedule-every', '12');
  await page.fill('#schedule-keep', '3');
  await page.check('#schedule-kind-key-space');
  await page.click('#schedule-save');
  await page.waitForFunction(() => document.querySelector('#backup-schedule-now')?.textContent.startsWith('Every 12 h copying the key space'));
  assert.deepEqual(errors, []);
  await close();
});

test('the member sees the kubeadm join command and deletes the cluster, which stops its control plane (JavaScript off)', { skip }, async () => {
  assert.ok(clusterPath && kubeconfig, 'the previous test made a Ready cluster');
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + clusterPath);
  await submit(page, '#join-link');
  assert.equal(new URL(page.url()).pathname, `${clusterPath}/join`);
  assert.match(await page.locator('h1').textContent(), /team-h\/edge/);
  const command = (await page.locator('#join-command').textContent()).trim();
  // What a node needs beside the command: kubeadm and the kubelet, a runtime, CNI.
  const needs = await page.locator('#node-needs').textContent();
  for (const what of ['kubeadm and the kubelet', 'container runtime', 'CNI plugins']) assert.ok(needs.includes(what), needs);
  const m = command.match(/^kubeadm join (\S+) --token ([a-z0-9]{6})\.([a-z0-9]{16}) --discovery-token-ca-cert-hash sha256:([0-9a-f]{64})$/);
  assert.ok(m, command);
  const [, address, tokenId, tokenSecret, hash] = m;
  assert.equal(`https://${address}`, kubeconfig.server);
  // The hash is the cluster CA's public key, as kubeadm computes it.
  const spki = new X509Certificate(kubeconfig.ca).publicKey.export({ type: 'spki', format: 'der' });
  assert.equal(hash, createHash('sha256').update(spki).digest('hex'));
  // What `kubeadm join` reads before it has credentials: cluster-info, signed for this token
  // by the controller manager's bootstrap signer (which may take a moment).
  const signed = (r) => r.status === 200 && Boolean(JSON.parse(r.body).data?.[`jws-kubeconfig-${tokenId}`]);
  const info = await until(() => kubeGet(kubeconfig.server, { ca: kubeconfig.ca }, '/api/v1/namespaces/kube-public/configmaps/cluster-info'), signed, 30_000);
  assert.ok(signed(info), `cluster-info is not signed for ${tokenId}: ${info.body}`);
  assert.ok(JSON.parse(info.body).data.kubeconfig.includes(kubeconfig.server), 'cluster-info names the endpoint');
  // The token is a live bootstrap token: it reads kubeadm-config, not the other maps.
  const bootstrap = { ca: kubeconfig.ca, token: `${tokenId}.${tokenSecret}` };
  const config = await kubeGet(kubeconfig.server, bootstrap, '/api/v1/namespaces/kube-system/configmaps/kubeadm-config');
  assert.equal(config.status, 200, config.body);
  const others = await kubeGet(kubeconfig.server, bootstrap, '/api/v1/namespaces/kube-system/configmaps');
  assert.equal(others.status, 403, others.body);
  // The join command (one long word) wraps: the page fits a phone and a desktop.
  for (const width of [390, 1440]) {
    await page.setViewportSize({ width, height: 844 });
    await assertFits(page, `${clusterPath}/join`);
  }

  // Delete: the processes stop and the cluster goes away.
  await page.goto(server.url + clusterPath);
  await submit(page, '#delete-cluster');
  // The delete removes the control plane: it is confirmed by typing the cluster's name.
  await page.fill('#confirm-name', await page.locator('#confirm-delete label code').textContent());
  await submit(page, '#confirm-delete-submit');
  const id = clusterPath.split('/').pop();
  let state = 'deleting';
  for (let i = 0; i < 120 && state; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    await page.goto(server.url + clusterPath);
    state = (await page.locator('[data-state]').count()) ? await page.locator('[data-state]').first().getAttribute('data-state') : '';
    assert.notEqual(state, 'error', await page.locator('#cluster-error').allTextContents().then((t) => t.join()));
  }
  assert.equal(state, '', 'the cluster is gone');
  await page.goto(server.url + '/clusters');
  assert.ok(!(await page.content()).includes(id), 'not listed any more');
  assert.deepEqual(processesMentioning(`${dataDir}/work/${id}/`), [], 'no control plane process left');
  await close();
});
