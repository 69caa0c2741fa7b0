// The first pages, server-rendered with JavaScript off and hydrated with it on.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';

let server;
let browser;

before(async () => {
  server = await startServer({
    seed: [
      seedOperator,
      ['tenant', 'create', 'team-a', '--name', 'Team Alpha'],
      ['tenant', 'create', 'team-b', '--name', 'Team Beta'],
      ['tenant', 'create', 'platform'],
    ],
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const rowsOf = (page) => page.locator('#tenant-table tbody tr').evaluateAll(
  (rows) => rows.map((r) => r.dataset.tenant),
);

async function checkShell(page) {
  const nav = page.getByRole('navigation', { name: 'Main' });
  for (const item of ['Clusters', 'Providers', 'Fleet', 'Backups', 'Approvals', 'Rollouts', 'Audit', 'Admin']) {
    assert.equal(await nav.getByText(item, { exact: true }).count(), 1, `nav item ${item}`);
  }
}

describe('JavaScript disabled (server-rendered)', () => {
  test('overview lists tenants from the database and filters with a GET form', async () => {
    const { page, close } = await newPage(browser, { javaScriptEnabled: false });
    await loginLocal(page, server.url);
    const res = await page.goto(server.url + '/');
    assert.equal(res.status(), 200);
    assert.equal(await page.title(), 'Overview · KQueen');
    await checkShell(page);
    assert.deepEqual(await rowsOf(page), ['platform', 'team-a', 'team-b']);
    assert.equal(await page.locator('.stat-value').first().textContent(), '3');
    assert.equal(await page.locator('#user-name').textContent(), 'admin');
    assert.equal(await page.locator('main').getAttribute('data-hydrated'), 'false');

    await page.fill('#tenant-filter', 'alpha');
    await Promise.all([page.waitForURL(/\?q=alpha$/), page.press('#tenant-filter', 'Enter')]);
    assert.deepEqual(await rowsOf(page), ['team-a']);
    assert.equal(await page.inputValue('#tenant-filter'), 'alpha');

    await page.goto(server.url + '/?q=nothing-like-this');
    assert.match(await page.locator('#tenant-empty').textContent(), /No tenant matches/);
    await close();
  });

  test('audit log shows the creations made from the command line', async () => {
    const { page, close } = await newPage(browser, { javaScriptEnabled: false });
    await loginLocal(page, server.url);
    await page.goto(server.url + '/audit?action=tenant.create');
    const targets = await page.locator('#audit-table tbody tr td:nth-child(5)').allTextContents();
    assert.deepEqual(targets, ['platform', 'team-b', 'team-a']);
    assert.match(await page.locator('#audit-table tbody tr').first().textContent(), /success/);
    await close();
  });

  test('unknown paths answer 404 with a page', async () => {
    const { page, close } = await newPage(browser, { javaScriptEnabled: false });
    await loginLocal(page, server.url);
    const res = await page.goto(server.url + '/no/such/page');
    assert.equal(res.status(), 404);
    assert.equal(await page.locator('h1').textContent(), 'Page not found');
    await close();
  });
});

describe('JavaScript enabled (hydrated)', () => {
  test('typing in the filter updates the list and the URL without a page load', async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
    await loginLocal(page, server.url);
    await page.locator('main[data-hydrated="true"]').waitFor({ timeout: 15_000 });
    // A value that survives only as long as this document does: a reload would erase it.
    await page.evaluate(() => { window.kqueenSameDocument = true; });

    await page.locator('#tenant-filter').pressSequentially('beta', { delay: 30 });
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#tenant-table tbody tr')];
      return rows.length === 1 && rows[0].dataset.tenant === 'team-b';
    });
    assert.match(page.url(), /\?q=beta$/);
    assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'no reload happened');

    // Client-side navigation through the app shell, still in the same document.
    await page.getByRole('link', { name: 'Audit' }).click();
    await page.locator('#audit-table').waitFor();
    assert.match(page.url(), /\/audit$/);
    assert.equal(await page.title(), 'Audit · KQueen');
    assert.equal(await page.evaluate(() => window.kqueenSameDocument), true, 'no reload happened');
    assert.deepEqual(errors, []);
    await close();
  });
});
