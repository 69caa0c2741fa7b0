// Backups in the browser, against a real kube-apiserver (testkit/examples/kube_apiserver.rs,
// v1.20.2): an operator imports the cluster, puts a ConfigMap in it, takes a backup from the
// cluster page with JavaScript off (the form posts; the page reloads until it is taken) and
// one with Secrets and volume snapshots with JavaScript on (the section follows by itself;
// this cluster holds no claim to snapshot and the backup says so), reads what it holds
// (kinds, what was left out and why, the volume guidance) and downloads the archive, a
// gzipped tar holding backup.yaml and the ConfigMap's YAML. The ConfigMap, deleted, comes
// back from a backup after a preview limited to its namespace (over a production cluster,
// the restore is asked for and runs once a tenant admin approves), and the operator sets and
// stops the cluster's backup schedule (JavaScript off and on). A member of the tenant sees
// no Backups section and cannot fetch an archive. The Backups page lists every backup (a
// delete there asks first, JavaScript off and on); once the cluster is deleted, its backup is
// restored from there into another imported cluster. Skipped, with the reason printed,
// without the Kubernetes binaries.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember, requestCluster, waitForState } from '../support/portal.mjs';
import { startKubeApiserver, kubeApiserverSkip } from '../support/kube.mjs';

const MEMBER = { username: 'mira', password: 'a long enough password' };
const TENANT_ADMIN = { username: 'otto', password: 'another long password' };
const skip = kubeApiserverSkip();
if (skip) console.log(`backups.test.mjs skipped: ${skip}`);

let kube;
let server;
let browser;
let clusterPath;
let dir;

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'kqueen-backups-'));
  kube = await startKubeApiserver();
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(MEMBER), seedUser(TENANT_ADMIN)],
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addProvider(page, server.url, { kind: 'import', name: 'existing' });
  await addTemplate(page, server.url, { name: 'bring-your-own', provider: 'existing', tenants: 'team-a' });
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await addMember(page, server.url, 'team-a', TENANT_ADMIN.username, 'admin');
  clusterPath = await requestCluster(page, server.url, {
    tenant: 'team-a', template: 'bring-your-own', name: 'prod', fields: { 'f-kubeconfig': kube.kubeconfigText },
  });
  await waitForState(page, server.url, clusterPath, 'ready', { timeout: 60_000 });
  await close();
  // Something of the tenant's own to find in the archive.
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'default' }, data: { color: 'blue' } };
  const res = await kube.api('POST', '/api/v1/namespaces/default/configmaps', configMap);
  assert.equal(res.status, 201, JSON.stringify(res.body));
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await kube?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The backups' rows: id → state. */
const rows = (page) => page.locator('#backup-table > tbody > tr').evaluateAll(
  (trs) => trs.map((r) => ({ id: r.dataset.backup, state: r.dataset.backupState })),
);

/** Takes a backup from the cluster page and waits until the newest row is taken. */
async function takeBackup(page, js, { secrets, snapshots = false }) {
  await page.goto(`${server.url}${clusterPath}`);
  if (js) await page.waitForSelector('main[data-hydrated=true]');
  const before = (await rows(page)).length;
  if (secrets) await page.check('#backup-secrets');
  if (snapshots) await page.check('#backup-snapshots');
  await page.click('#take-backup');
  const deadline = Date.now() + 60_000;
  for (;;) {
    await page.waitForTimeout(300);
    if (!js) await page.goto(`${server.url}${clusterPath}`);
    const now = await rows(page);
    if (now.length > before && now[0].state === 'succeeded') return now[0].id;
    assert.ok(now.every((r) => r.state !== 'failed'), `a backup failed: ${await page.locator('#backups').textContent()}`);
    assert.ok(Date.now() < deadline, `not taken: ${JSON.stringify(now)}`);
  }
}

for (const js of [false, true]) {
  test(`an operator backs a cluster up and downloads its archive (JavaScript ${js ? 'on' : 'off'})`, { skip }, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    const id = await takeBackup(page, js, { secrets: js, snapshots: js });
    const row = page.locator(`#backup-table tr[data-backup="${id}"]`);
    const headline = await row.locator('.backup-headline').textContent();
    assert.match(headline, /object\(s\) in \d+ namespace\(s\)/);
    assert.match(headline, js ? /Secret\(s\) sealed in the vault/ : /Secret\(s\) not kept/);
    await row.locator('details summary').click();
    assert.match(await row.locator('.backup-kinds').textContent(), /ConfigMap: \d+/);
    assert.match(await row.locator('.backup-left-out').textContent(), /Event: events are history/);
    assert.match(await row.locator('.backup-volume-guidance').textContent(), /VolumeSnapshot/);
    // Snapshots asked for (JavaScript on): this cluster holds no claim, and the backup says so.
    assert.equal(await row.locator('.backup-snapshot-note').count(), js ? 1 : 0);
    if (js) assert.match(await row.locator('.backup-snapshot-note').textContent(), /holds no PersistentVolumeClaim: nothing to snapshot/);

    const [download] = await Promise.all([page.waitForEvent('download'), row.locator('[data-download]').click()]);
    assert.match(download.suggestedFilename(), /^prod-\d{8}-\d{6}\.tar\.gz$/);
    const file = join(dir, `backup-${js}.tar.gz`);
    await download.saveAs(file);
    assert.deepEqual([...readFileSync(file).subarray(0, 2)], [0x1f, 0x8b], 'gzip');
    const listing = execFileSync('tar', ['tzf', file], { encoding: 'utf8' }).split('\n');
    assert.ok(listing.includes('backup.yaml'), listing.join(' '));
    assert.ok(listing.includes('default/core/ConfigMap/settings.yaml'), listing.join(' '));
    assert.ok(!listing.some((p) => p.includes('/Secret/')), 'never a Secret in the archive');
    const settings = execFileSync('tar', ['xzOf', file, 'default/core/ConfigMap/settings.yaml'], { encoding: 'utf8' });
    assert.match(settings, /color: blue/);
    assert.doesNotMatch(settings, /resourceVersion|uid:/);
    assert.deepEqual(errors, []);
    await close();
  });
}

for (const js of [false, true]) {
  test(`a deleted ConfigMap comes back from a backup after a preview (JavaScript ${js ? 'on' : 'off'})`, { skip }, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    const id = await takeBackup(page, js, { secrets: false });
    const gone = await kube.api('DELETE', '/api/v1/namespaces/default/configmaps/settings');
    assert.equal(gone.status, 200, JSON.stringify(gone.body));
    await page.goto(`${server.url}${clusterPath}`);
    await page.click(`[data-restore="${id}"]`);
    await page.waitForSelector('#restore-form');
    if (js) await page.waitForSelector('main[data-hydrated=true]');
    // This cluster is the default target; only the namespace `default`.
    await page.check('#restore-ns-default');
    await Promise.all([page.waitForURL(/plan=1/), page.click('#restore-preview')]);
    await page.waitForSelector('#restore-plan');
    const fate = (name) => page.locator(`#restore-plan tr[data-name="${name}"]`).first().getAttribute('data-fate');
    assert.equal(await fate('default/settings'), 'will-create');
    assert.match(await page.locator('#restore-summary').textContent(), /1 to create/);
    const namespaces = await page.locator('#restore-plan tr[data-name]').evaluateAll(
      (rows) => rows.map((r) => r.dataset.name).filter((n) => n.includes('/')).map((n) => n.split('/')[0]),
    );
    assert.ok(namespaces.every((n) => n === 'default'), namespaces.join(' '));
    await Promise.all([page.waitForURL(new RegExp(`${clusterPath}$`), { timeout: 30_000 }), page.click('#restore-run')]);
    for (let i = 0; ; i++) {
      const back = await kube.api('GET', '/api/v1/namespaces/default/configmaps/settings');
      if (back.status === 200) {
        assert.equal(back.body.data.color, 'blue');
        break;
      }
      assert.ok(i < 120, `the ConfigMap did not come back: ${back.status}`);
      await page.waitForTimeout(250);
    }
    assert.deepEqual(errors, []);
    await close();
  });
}

test('a restore over a production cluster is asked for, and runs once a second person approves', { skip }, async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  const id = await takeBackup(page, false, { secrets: false });
  await page.goto(`${server.url}${clusterPath}`);
  await Promise.all([page.waitForNavigation(), page.click('#mark-production')]);
  await page.waitForSelector('#production-badge');
  const gone = await kube.api('DELETE', '/api/v1/namespaces/default/configmaps/settings');
  assert.equal(gone.status, 200, JSON.stringify(gone.body));
  await page.click(`[data-restore="${id}"]`);
  await page.check('#restore-ns-default');
  await Promise.all([page.waitForURL(/plan=1/), page.click('#restore-preview')]);
  await page.waitForSelector('#restore-needs-approval');
  assert.equal((await page.textContent('#restore-run')).trim(), 'Request restore (needs approval)');
  await page.fill('#restore-reason', 'settings lost');
  await Promise.all([page.waitForURL(new RegExp(`${clusterPath}`)), page.click('#restore-run')]);
  const request = page.locator('#approval-list tr[data-action=restore][data-state=pending]');
  assert.match(await request.textContent(), /settings lost/);
  assert.match(await request.textContent(), new RegExp(`backup ${id} \\(default\\)`));
  assert.equal((await kube.api('GET', '/api/v1/namespaces/default/configmaps/settings')).status, 404, 'nothing restored yet');

  // A tenant admin approves it: the restore runs as theirs and the ConfigMap comes back.
  const second = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(second.page, server.url, TENANT_ADMIN);
  await second.page.goto(`${server.url}${clusterPath}`);
  await Promise.all([second.page.waitForNavigation(), second.page.click('#approval-list tr[data-state=pending] button.approve')]);
  await second.page.waitForSelector('#approval-list tr[data-action=restore][data-state=approved]');
  for (let i = 0; ; i++) {
    const back = await kube.api('GET', '/api/v1/namespaces/default/configmaps/settings');
    if (back.status === 200) break;
    assert.ok(i < 120, `the ConfigMap did not come back: ${back.status}`);
    await page.waitForTimeout(250);
  }

  // The mark comes off the same way, so that later tests may delete the cluster.
  const clusterId = clusterPath.split('/').pop();
  const origin = { headers: { Origin: server.url } };
  const asked = await page.request.post(`${server.url}/api/v1/clusters/${clusterId}/approvals`, { data: { action: 'unprotect' }, ...origin });
  assert.equal(asked.status(), 201, await asked.text());
  const approved = await second.page.request.post(`${server.url}/api/v1/approvals/${(await asked.json()).id}/approve`, origin);
  assert.equal((await approved.json()).state, 'approved');
  await second.close();
  assert.deepEqual(errors, []);
  await close();
});

for (const js of [false, true]) {
  test(`an operator sets and stops a cluster's backup schedule (JavaScript ${js ? 'on' : 'off'})`, { skip }, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    await page.goto(`${server.url}${clusterPath}`);
    if (js) await page.waitForSelector('main[data-hydrated=true]');
    assert.equal((await page.locator('#backup-schedule-now').textContent()).trim(), 'No scheduled backups.');
    await page.fill('#schedule-every', '12');
    await page.fill('#schedule-keep', '3');
    await page.click('#schedule-save');
    await page.waitForFunction(() => /Every 12 h/.test(document.querySelector('#backup-schedule-now')?.textContent ?? ''));
    assert.match(await page.locator('#backup-schedule-now').textContent(), /Every 12 h without Secrets, keeping the newest 3; next backup/);
    await page.click('#schedule-stop');
    await page.waitForFunction(() => /No scheduled backups/.test(document.querySelector('#backup-schedule-now')?.textContent ?? ''));
    assert.deepEqual(errors, []);
    await close();
  });
}

test('a member sees no backups and cannot fetch an archive', { skip }, async () => {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(`${server.url}${clusterPath}`);
  await page.waitForSelector('h1');
  assert.match(await page.locator('h1').textContent(), /prod/);
  assert.equal(await page.locator('#backups').count(), 0);
  const res = await page.request.get(`${server.url}${clusterPath}/backups/00000000-0000-7000-8000-000000000000/archive`, { maxRedirects: 0 });
  assert.equal(res.status(), 303);
  assert.match(res.headers().location, /error=permission/i);
  await close();
});

for (const js of [false, true]) {
  test(`the Backups page lists every backup and deletes one after confirming (JavaScript ${js ? 'on' : 'off'})`, { skip }, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    const id = await takeBackup(page, js, { secrets: false });
    await page.goto(`${server.url}/backups`);
    if (js) await page.waitForSelector('main[data-hydrated=true]');
    assert.equal(await page.locator('nav a[href="/backups"]').count(), 1);
    const row = page.locator(`#all-backups tr[data-backup="${id}"]`);
    assert.equal(await row.getAttribute('data-cluster-deleted'), 'false');
    assert.match(await row.locator('td').first().textContent(), /team-a\/prod/);
    assert.equal(await page.locator('#confirm-backup-delete').count(), 0, 'nothing to confirm yet');
    await row.locator(`[data-delete="${id}"]`).click();
    await page.locator('#confirm-backup-delete').waitFor();
    assert.match(page.url(), /confirm=delete-backup/);
    if (js) await page.click('#confirm-backup-delete-submit');
    else await Promise.all([page.waitForNavigation(), page.click('#confirm-backup-delete-submit')]);
    await page.waitForFunction((b) => !document.querySelector(`#all-backups tr[data-backup="${b}"]`), id);
    assert.equal(await page.locator('#confirm-backup-delete').count(), 0);
    const gone = await page.request.get(`${server.url}/backups/${id}/archive`, { maxRedirects: 0 });
    assert.equal(gone.status(), 303);
    assert.match(gone.headers().location, /error=/);
    assert.deepEqual(errors, []);
    await close();
  });
}

test("a deleted cluster's backup is restored into another cluster from the Backups page", { skip }, async () => {
  const spare = await startKubeApiserver();
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  try {
    await loginLocal(page, server.url);
    const id = await takeBackup(page, true, { secrets: false });
    const sparePath = await requestCluster(page, server.url, {
      tenant: 'team-a', template: 'bring-your-own', name: 'spare', fields: { 'f-kubeconfig': spare.kubeconfigText },
    });
    await waitForState(page, server.url, sparePath, 'ready', { timeout: 60_000 });

    // The backed-up cluster goes.
    await page.goto(`${server.url}${clusterPath}`);
    await page.waitForSelector('main[data-hydrated=true]');
    await page.click('#delete-cluster');
    await page.locator('#confirm-delete').waitFor();
    await page.click('#confirm-delete-submit');
    for (let i = 0; ; i++) {
      await page.goto(`${server.url}/backups`);
      const deleted = await page.locator(`#all-backups tr[data-backup="${id}"]`).getAttribute('data-cluster-deleted');
      if (deleted === 'true') break;
      assert.ok(i < 120, 'the cluster was never deleted');
      await page.waitForTimeout(250);
    }
    await page.waitForSelector('main[data-hydrated=true]');
    await page.click(`#all-backups [data-restore="${id}"]`);
    await page.waitForSelector('#restore-form');
    await page.waitForSelector('main[data-hydrated=true]');
    assert.match(await page.locator('#restore-cluster-deleted').textContent(), /was deleted/);
    await page.selectOption('#restore-target', { label: 'team-a/spare' });
    await Promise.all([page.waitForURL(/plan=1/), page.click('#restore-preview')]);
    await page.waitForSelector('#restore-plan');
    const fate = await page.locator('#restore-plan tr[data-name="default/settings"]').first().getAttribute('data-fate');
    assert.equal(fate, 'will-create');
    await Promise.all([page.waitForURL(new RegExp(`${sparePath}$`), { timeout: 30_000 }), page.click('#restore-run')]);
    for (let i = 0; ; i++) {
      const back = await spare.api('GET', '/api/v1/namespaces/default/configmaps/settings');
      if (back.status === 200) {
        assert.equal(back.body.data.color, 'blue');
        break;
      }
      assert.ok(i < 120, `the ConfigMap was not restored: ${back.status}`);
      await page.waitForTimeout(250);
    }
    assert.deepEqual(errors, []);
  } finally {
    await close();
    await spare.stop();
  }
});
