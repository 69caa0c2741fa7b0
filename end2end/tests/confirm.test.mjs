// Destructive actions ask first, with JavaScript off (a confirmation page) and on (the same
// step in the page, no reload, no window.confirm): deleting a cluster (typing its name when
// the delete removes machines), deleting a provider, removing a member, revoking one's access.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
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
      { args: ['user', 'create', 'erin', '--password-stdin'], input: 'another long password\n' },
    ],
  });
  browser = await launchBrowser();

  // Providers: `machines` has a delete command (its delete removes machines: a slow one, so
  // the page shows it under way), `forget` has none (its delete only forgets the cluster),
  // `spare` is there to be deleted; a template on the first two; two members.
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  for (const [name, del] of [['machines', '/bin/sleep 30'], ['forget', null], ['spare', null]]) {
    await page.goto(server.url + '/providers?kind=command');
    await page.fill('#provider-name', name);
    await page.fill('#f-create_command', `${installer} ${fake.kubeconfig} 0`);
    if (del) await page.fill('#f-delete_command', del);
    await submit(page, '#provider-submit');
  }
  for (const [name, provider] of [['m', 'machines'], ['f', 'forget']]) {
    await page.fill('#template-name', name);
    await page.selectOption('#template-provider', provider);
    await submit(page, '#template-submit');
  }
  for (const user of [MEMBER.username, 'erin']) {
    await page.goto(server.url + '/tenants/team-a');
    await page.fill('#member-username', user);
    await submit(page, '#add-member button[type=submit]');
  }
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
});

/** Requests a cluster from `template` in team-a (JavaScript off) and waits until it is Ready. */
async function readyCluster(browser, name, template) {
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(`${server.url}/clusters/new?tenant=team-a&template=${template}`);
  await page.fill('#p-name', name);
  await submit(page, '#request-submit');
  const path = new URL(page.url()).pathname;
  assert.match(path, /^\/clusters\/[0-9a-f-]{36}$/, await page.content());
  let state = '';
  for (let i = 0; i < 60 && state !== 'ready'; i++) {
    await page.goto(server.url + path);
    state = await page.locator('[data-state]').first().getAttribute('data-state');
    assert.notEqual(state, 'error');
    if (state !== 'ready') await new Promise((r) => setTimeout(r, 500));
  }
  assert.equal(state, 'ready');
  await close();
  return path;
}

const stateOf = (page) => page.locator('h1 [data-state]').getAttribute('data-state');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The cluster page shows the delete under way (or the cluster is gone already). */
async function deletingOrGone(page) {
  let state = 'ready';
  for (let i = 0; i < 50 && state === 'ready'; i++) {
    if (i) await sleep(200);
    state = (await page.locator('h1 [data-state]').count()) ? await stateOf(page) : 'gone';
  }
  assert.ok(['deleting', 'gone'].includes(state), state);
}

/** The operator deletes cluster `path` whose delete removes machines, with `js` on or off. */
async function deleteWithTypedName(path, name, js) {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await loginLocal(page, server.url);
  await page.goto(server.url + path);
  if (js) {
    await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
    await page.evaluate(() => { window.kqueenSameDocument = true; });
  }
  // The actions sit in their own card, away from the kubeconfig.
  assert.equal(await page.locator('#cluster-actions #delete-cluster').count(), 1);
  assert.equal(await page.locator('#cluster-actions #kubeconfig-download').count(), 0);
  assert.equal(await page.locator('#confirm-delete').count(), 0, 'nothing to confirm yet');

  if (js) await page.click('#delete-cluster');
  else await submit(page, '#delete-cluster');
  await page.locator('#confirm-delete').waitFor();
  assert.match(page.url(), /\?confirm=delete$/);
  assert.match(await page.locator('#confirm-delete').textContent(), /machines are removed/);
  assert.equal(await page.locator('#confirm-delete label code').textContent(), name);

  // A wrong name is refused by the server: the cluster stays, the step asks again.
  await page.fill('#confirm-name', `${name}-not`);
  if (js) await page.click('#confirm-delete-submit');
  else await submit(page, '#confirm-delete-submit');
  await page.locator('#form-error').waitFor();
  assert.match(await page.locator('#form-error').textContent(), new RegExp(`type the cluster's name, ${name}`));
  // Hydrated, the page reads the cluster again after the write: let that land first.
  if (js) await sleep(1000);
  assert.equal(await stateOf(page), 'ready');
  await page.locator('#confirm-delete').waitFor();
  assert.deepEqual(errors, []);

  // The right name deletes.
  await page.fill('#confirm-name', name);
  if (js) await page.click('#confirm-delete-submit');
  else await submit(page, '#confirm-delete-submit');
  await page.waitForURL((u) => u.pathname === path && u.search === '');
  await deletingOrGone(page);
  assert.equal(await page.locator('#confirm-delete').count(), 0);
  if (js) assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'no reload happened');
  assert.deepEqual(dialogs, [], 'no window.confirm');
  assert.deepEqual(errors, []);
  await close();
}

/** The operator cancels, then confirms, the delete of a cluster that is only forgotten. */
async function deleteAfterCancel(path, js) {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await loginLocal(page, server.url);
  await page.goto(server.url + path);
  if (js) {
    await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
    await page.evaluate(() => { window.kqueenSameDocument = true; });
  }
  const open = () => (js ? page.click('#delete-cluster') : submit(page, '#delete-cluster'));
  await open();
  await page.locator('#confirm-delete').waitFor();
  assert.match(await page.locator('#confirm-delete').textContent(), /forget this cluster; nothing is removed/);
  assert.equal(await page.locator('#confirm-name').count(), 0, 'no name to type');

  if (js) await page.click('#confirm-delete-cancel');
  else await submit(page, '#confirm-delete-cancel');
  await page.locator('#confirm-delete').waitFor({ state: 'detached' });
  assert.equal(new URL(page.url()).search, '');
  assert.equal(await stateOf(page), 'ready', 'cancel deletes nothing');

  await open();
  await page.locator('#confirm-delete').waitFor();
  // (Once the cluster is forgotten, its page answers 404, which Chromium logs as an error.)
  assert.deepEqual(errors, []);
  if (js) await page.click('#confirm-delete-submit');
  else await submit(page, '#confirm-delete-submit');
  await page.waitForURL((u) => u.pathname === path && u.search === '');
  await deletingOrGone(page);
  if (js) assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'no reload happened');
  assert.deepEqual(dialogs, [], 'no window.confirm');
  await close();
}

test('deleting clusters asks first, the name when machines go (JavaScript off)', async () => {
  const [m, f] = [await readyCluster(browser, 'ssr-m', 'm'), await readyCluster(browser, 'ssr-f', 'f')];
  await deleteWithTypedName(m, 'ssr-m', false);
  await deleteAfterCancel(f, false);
});

test('deleting clusters asks first, in the page (JavaScript on)', async () => {
  const [m, f] = [await readyCluster(browser, 'js-m', 'm'), await readyCluster(browser, 'js-f', 'f')];
  await deleteWithTypedName(m, 'js-m', true);
  await deleteAfterCancel(f, true);
});

test('a member confirms revoking their own access (JavaScript off)', async () => {
  const path = await readyCluster(browser, 'shared', 'f');
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + path);
  await submit(page, '#revoke-access');
  assert.match(await page.locator('#confirm-revoke').textContent(), /stop working/);
  await submit(page, '#confirm-revoke-cancel');
  assert.equal(await page.locator('#confirm-revoke').count(), 0);
  await submit(page, '#revoke-access');
  await submit(page, '#confirm-revoke-submit');
  assert.equal(new URL(page.url()).search, '');
  assert.equal(await page.locator('#form-error').count(), 0);
  await close();
});

test('removing a member and deleting a provider ask first (JavaScript on, then off)', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/tenants/team-a');
  await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
  await page.evaluate(() => { window.kqueenSameDocument = true; });
  const remove = page.locator('#member-table tr[data-member=erin] a', { hasText: 'Remove' });
  await remove.click();
  await page.locator('#confirm-remove').waitFor();
  assert.match(await page.locator('#confirm-remove h2').textContent(), /Remove erin from team-a/);
  await page.click('#confirm-remove-cancel');
  await page.locator('#confirm-remove').waitFor({ state: 'detached' });
  assert.equal(await page.locator('#member-table tr[data-member=erin]').count(), 1, 'cancel removes nobody');
  await remove.click();
  await page.click('#confirm-remove-submit');
  await page.locator('#member-table tr[data-member=erin]').waitFor({ state: 'detached' });
  // The table is read again after the write: the other member is back with it.
  await page.locator('#member-table tr[data-member=devon]').waitFor();
  assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'no reload happened');
  assert.deepEqual(dialogs, []);
  assert.deepEqual(errors, []);
  await close();

  const ssr = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(ssr.page, server.url);
  await ssr.page.goto(server.url + '/providers');
  const del = '#provider-table tr[data-provider=spare] a:has-text("Delete")';
  await submit(ssr.page, del);
  assert.match(await ssr.page.locator('#confirm-delete').textContent(), /Delete provider spare\?.*No template uses it/s);
  await submit(ssr.page, '#confirm-delete-cancel');
  assert.equal(await ssr.page.locator('#provider-table tr[data-provider=spare]').count(), 1, 'cancel deletes nothing');
  // A provider templates use: the step says so before anything is tried.
  await ssr.page.goto(server.url + '/providers?confirm=delete-provider&name=forget');
  assert.match(await ssr.page.locator('#confirm-delete').textContent(), /Templates use it \(f\)/);
  await ssr.page.goto(server.url + '/providers');
  await submit(ssr.page, del);
  await submit(ssr.page, '#confirm-delete-submit');
  assert.equal(await ssr.page.locator('#provider-table tr[data-provider=spare]').count(), 0);
  assert.equal(await ssr.page.locator('#form-error').count(), 0);
  await ssr.close();
});
