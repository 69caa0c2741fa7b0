// Two-person approval of a production cluster's delete, in the browser: the operator marks
// a cluster production (JavaScript off), its "Delete" becomes a request with a reason; the one
// who asked can only withdraw; a member sees the request but cannot decide it; a tenant admin
// refuses one request on the "Approvals" page and approves the next (JavaScript on), and the
// cluster is then deleted by the approver's operation. Taking the mark off is a request too.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, startFakeKube, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const installer = join(repo, 'end2end', 'support', 'install.sh');
const ADMIN = { username: 'erin', password: 'another long password' };
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
      { args: ['user', 'create', ADMIN.username, '--password-stdin'], input: `${ADMIN.password}\n` },
    ],
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/providers?kind=command');
  await page.fill('#provider-name', 'forget');
  await page.fill('#f-create_command', `${installer} ${fake.kubeconfig} 0`);
  await submit(page, '#provider-submit');
  await page.fill('#template-name', 'f');
  await page.selectOption('#template-provider', 'forget');
  await submit(page, '#template-submit');
  for (const [user, role] of [[MEMBER.username, 'member'], [ADMIN.username, 'admin']]) {
    await page.goto(server.url + '/tenants/team-a');
    await page.fill('#member-username', user);
    await page.selectOption('#member-role', role);
    await submit(page, '#add-member button[type=submit]');
  }
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
});

/** Requests cluster `name` in team-a as the operator and waits until it is Ready. */
async function readyCluster(page, name) {
  await page.goto(`${server.url}/clusters/new?tenant=team-a&template=f`);
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
  return path;
}

/** Asks (JavaScript off) to delete the production cluster at `path`, with `reason`. */
async function requestDeletion(page, path, reason) {
  await page.goto(server.url + path);
  assert.equal((await page.textContent('#delete-cluster')).trim(), 'Request deletion…');
  await page.click('#delete-cluster');
  await page.waitForSelector('#confirm-request');
  await page.fill('#request-reason', reason);
  await submit(page, '#request-submit');
  await page.waitForSelector('#approval-list tr[data-state=pending]');
}

test('a production cluster is deleted only once a second person approves', async () => {
  const op = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(op.page, server.url);
  const path = await readyCluster(op.page, 'shop');

  // Marked production: the badge, and "Delete" becomes a request.
  await op.page.goto(server.url + path);
  assert.equal(await op.page.getAttribute('#approvals', 'data-production'), 'false');
  await submit(op.page, '#mark-production');
  await op.page.waitForSelector('#production-badge');
  assert.equal(await op.page.getAttribute('#approvals', 'data-production'), 'true');
  await requestDeletion(op.page, path, 'moving to the new region');

  // The one who asked withdraws; there is no "Approve" for them.
  const mine = op.page.locator('#approval-list tr[data-state=pending]');
  assert.equal(await mine.locator('button.approve').count(), 0);
  assert.equal((await mine.locator('button.refuse').textContent()).trim(), 'Withdraw');
  await Promise.all([op.page.waitForNavigation(), mine.locator('button.refuse').click()]);
  assert.equal(await op.page.locator('#approval-list tr[data-state=withdrawn]').count(), 1);
  await requestDeletion(op.page, path, 'moving to the new region');

  // A member sees the request, and cannot decide it.
  const member = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(member.page, server.url, MEMBER);
  await member.page.goto(server.url + path);
  const seen = member.page.locator('#approval-list tr[data-state=pending]');
  assert.equal(await seen.count(), 1);
  assert.match(await seen.textContent(), /moving to the new region/);
  assert.equal(await seen.locator('button').count(), 0);
  await member.close();

  // A tenant admin, JavaScript on: refuses it on the "Approvals" page, with a reason…
  const admin = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(admin.page, server.url, ADMIN);
  await admin.page.goto(server.url + '/approvals');
  const row = admin.page.locator('#approval-list tr[data-action=delete]');
  await row.waitFor();
  assert.match(await row.textContent(), /shop/);
  await row.locator('input[name=reason]').fill('not during the sale');
  await row.locator('button.refuse').click();
  await admin.page.waitForSelector('#no-approvals');

  // …and approves the next request: the cluster is deleted, the request names both.
  await op.page.goto(server.url + path);
  const refused = op.page.locator('#approval-list tr[data-state=refused]');
  assert.match(await refused.textContent(), /refused by erin/);
  assert.match(await refused.textContent(), /not during the sale/);
  await requestDeletion(op.page, path, 'really moving now');
  await admin.page.goto(server.url + path);
  const pending = admin.page.locator('#approval-list tr[data-state=pending]');
  await pending.locator('button.approve').waitFor();
  const id = await pending.getAttribute('data-approval');
  await pending.locator('button.approve').click();
  // The decision is written first (once), then the delete is queued and its operation
  // recorded on the request: wait for both (or for the note saying why it could not run).
  const settled = (a) => a?.state === 'approved' && (a.operation || a.note);
  let approved;
  for (let i = 0; i < 120 && !settled(approved); i++) {
    approved = await (await admin.page.request.get(`${server.url}/api/v1/approvals/${id}`)).json();
    if (!settled(approved)) await new Promise((r) => setTimeout(r, 250));
  }
  assert.equal(approved.state, 'approved', JSON.stringify(approved));
  assert.equal(approved.decided_by, ADMIN.username);
  assert.equal(approved.requested_by, 'admin');
  assert.ok(approved.operation, `the approved delete queued an operation: ${JSON.stringify(approved)}`);
  let gone = false;
  for (let i = 0; i < 60 && !gone; i++) {
    const res = await op.page.goto(server.url + path);
    gone = res.status() === 404;
    if (!gone) await new Promise((r) => setTimeout(r, 500));
  }
  assert.ok(gone, 'the approved delete removes the cluster');
  await admin.close();
  await op.close();
});

test('taking the production mark off is asked for, and a second person approves it', async () => {
  const op = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(op.page, server.url);
  const path = await readyCluster(op.page, 'books');
  await op.page.goto(server.url + path);
  await submit(op.page, '#mark-production');
  await op.page.waitForSelector('#unprotect-link');
  await op.page.click('#unprotect-link');
  await op.page.waitForSelector('#confirm-request');
  await submit(op.page, '#request-submit');
  assert.equal(await op.page.locator('#approval-list tr[data-action=unprotect][data-state=pending]').count(), 1);

  const admin = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(admin.page, server.url, ADMIN);
  await admin.page.goto(server.url + path);
  await submit(admin.page, '#approval-list tr[data-state=pending] button.approve');
  await admin.page.waitForSelector('#approval-list tr[data-action=unprotect][data-state=approved]');
  assert.equal(await admin.page.getAttribute('#approvals', 'data-production'), 'false');
  assert.equal(await admin.page.locator('#production-badge').count(), 0);
  assert.equal((await admin.page.textContent('#delete-cluster')).trim(), 'Delete cluster…');
  await admin.close();
  await op.close();
});
