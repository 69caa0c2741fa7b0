// Pages as people meet them: unknown pages answer 404, pages log no console error, the
// choosing steps navigate in place when hydrated, and a member sees only what a member can
// use (no greyed menu items, the audit page's refusal without its filters).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';
import { seedUser, addMember, DOCUMENT_404 } from '../support/portal.mjs';

const MEMBER = { username: 'devon', password: 'a long enough password' };

let server;
let browser;

before(async () => {
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(MEMBER)],
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

for (const js of [false, true]) {
  test(`unknown pages answer 404 and say so (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    for (const [path, heading] of [
      ['/no/such/page', 'Page not found'],
      ['/fleet/no-such-tab', 'Page not found'],
      ['/clusters/00000000-0000-0000-0000-000000000000', 'Cluster'],
      ['/clusters/not-a-cluster', 'Cluster'],
      ['/clusters/00000000-0000-0000-0000-000000000000/join', 'Add worker nodes'],
      ['/tenants/no-such-tenant', 'Tenant'],
    ]) {
      const res = await page.goto(server.url + path);
      assert.equal(res.status(), 404, path);
      if (js) await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('h1').textContent(), heading, path);
      assert.deepEqual(errors.splice(0).filter((e) => e !== DOCUMENT_404), [], path);
    }
    // Known pages still answer 200.
    for (const path of ['/clusters', '/tenants/team-a']) {
      assert.equal((await page.goto(server.url + path)).status(), 200, path);
    }
    assert.deepEqual(errors, []);
    await close();
  });
}

test('an operator\'s pages log no console error, and the tenant slug is checked in the browser', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url);
  for (const path of ['/admin', '/audit', '/providers', '/tenants/team-a', '/clusters', '/clusters/new', '/tokens']) {
    await page.goto(server.url + path);
    await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
    assert.deepEqual(errors, [], path);
  }
  // The slug's pattern compiles (Chromium compiles it with the `v` flag): a bad slug is
  // refused before anything is sent, a good one is accepted.
  await page.goto(server.url + '/admin');
  await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
  await page.fill('#tenant-slug', 'Not_A-Slug');
  assert.equal(await page.$eval('#tenant-slug', (e) => e.validity.patternMismatch), true);
  await page.fill('#tenant-slug', 'team-z');
  assert.equal(await page.$eval('#tenant-slug', (e) => e.checkValidity()), true);
  assert.deepEqual(errors, []);
  await close();
});

for (const js of [false, true]) {
  test(`a member sees only what a member can use (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url, MEMBER);
    await page.goto(server.url + '/audit');
    if (js) await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
    const nav = page.getByRole('navigation', { name: 'Main' });
    assert.deepEqual(await nav.locator('li').allTextContents(), ['Clusters', 'Fleet']);
    assert.equal(await page.locator('.nav-soon, [aria-disabled=true]').count(), 0, 'no greyed items');
    // The audit page: the refusal, nothing to fill in.
    assert.match(await page.locator('main').textContent(), /permission denied/);
    assert.equal(await page.locator('main form').count(), 0, 'no filter form');
    assert.equal(await page.locator('#audit-csv').count(), 0, 'no export');
    assert.deepEqual(errors, []);
    await close();
  });
}

test('the Choose and Show the form steps navigate in place when hydrated', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url);
  await page.goto(server.url + '/providers');
  await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
  await page.evaluate(() => { window.kqueenSameDocument = true; });
  await page.selectOption('#kind', 'command');
  await page.click('#provider-kind button[type=submit]');
  await page.waitForURL(/\/providers\?kind=command&step=settings$/);
  await page.locator('#f-create_command').waitFor();
  assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'Choose did not reload');

  await page.goto(server.url + '/clusters/new');
  await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
  await page.evaluate(() => { window.kqueenSameDocument = true; });
  await page.selectOption('#r-tenant', 'team-a');
  await page.click('#choose-template button[type=submit]');
  await page.waitForURL(/\/clusters\/new\?tenant=team-a&template=&step=parameters$/);
  await page.locator('#quota-note').waitFor();
  assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'Show the form did not reload');
  assert.deepEqual(errors, []);
  await close();
});
