// Single sign-on in the browser: log in through the OpenID provider's own form (npm
// oidc-provider), land in the tenant the groups map to, log out of portal and provider.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage } from '../support/harness.mjs';
import { startProvider } from '../oidc/provider.mjs';

let provider;
let server;
let browser;

before(async () => {
  provider = await startProvider({ port: 0, log: () => {} });
  server = await startServer({
    env: {
      KQUEEN_OIDC_ISSUER_URL: provider.issuer,
      KQUEEN_OIDC_CLIENT_ID: 'kqueen',
      KQUEEN_OIDC_CLIENT_SECRET: 'kqueen-secret',
      KQUEEN_GROUP_MAP: 'team-a=team-a:member,kaas-admins=*:operator',
      KQUEEN_LOCAL_ACCOUNTS: 'false',
    },
  });
  browser = await launchBrowser();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await provider?.close();
});

for (const javaScriptEnabled of [false, true]) {
  test(`log in with single sign-on and log out (JavaScript ${javaScriptEnabled ? 'on' : 'off'})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled });
    await page.goto(server.url + '/audit');
    await page.waitForURL(/\/login\?next=%2Faudit/);
    assert.equal(await page.locator('#local-login').count(), 0, 'local accounts are disabled');

    await page.click('#sso-login');
    await page.waitForURL((u) => u.href.startsWith(provider.issuer));
    await page.fill('#login', 'alice');
    await page.fill('#password', 'not-her-password');
    await page.click('#submit');
    assert.match(await page.locator('#error').textContent(), /Invalid username or password/);
    await page.fill('#login', 'alice');
    await page.fill('#password', 'alice-pw');
    await page.click('#submit');
    await page.locator('#submit').click(); // consent
    // Back in the portal, where the login started; alice is no tenant admin, so the audit
    // page refuses her, and the overview shows her tenant.
    await page.waitForURL((u) => u.href.startsWith(server.url));
    assert.equal(await page.locator('#user-name').textContent(), 'Alice Example');
    assert.match(await page.locator('main').textContent(), /permission denied/);
    await page.goto(server.url + '/');
    assert.deepEqual(
      await page.locator('#tenant-table tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.tenant)),
      ['team-a'],
    );

    // A personal API token: created on the tokens page, shown once, usable like curl.
    await page.goto(server.url + '/tokens');
    await page.fill('#token-name', 'laptop');
    await Promise.all([page.waitForURL(/\/tokens$/), page.click('#create-token button[type=submit]')]);
    const secret = (await page.locator('#new-token').textContent()).trim();
    assert.match(secret, /^kq_[A-Za-z0-9_-]{43}$/);
    const me = await fetch(server.url + '/api/v1/whoami', { headers: { Authorization: `Bearer ${secret}` } });
    assert.equal(me.status, 200);
    assert.deepEqual((await me.json()).tenants, [{ tenant: 'team-a', role: 'member' }]);
    await page.reload();
    assert.equal(await page.locator('#new-token').count(), 0, 'shown only once');
    assert.equal(await page.locator('#token-table button').count(), 1, 'one active token to revoke');
    await Promise.all([page.waitForURL(/\/tokens$/), page.click('#token-table button')]);
    // Hydrated, the form posts in place: the list shows the token revoked once it is.
    await page.locator('#token-table button').waitFor({ state: 'detached' });
    const revoked = await fetch(server.url + '/api/v1/whoami', { headers: { Authorization: `Bearer ${secret}` } });
    assert.equal(revoked.status, 401);

    await page.click('#logout');
    await page.waitForURL((u) => u.href.startsWith(provider.issuer));
    await page.click('#submit'); // the provider asks to confirm
    await page.waitForURL(/\/login\?logged_out=1/);
    assert.match(await page.locator('#login-message').textContent(), /signed out/);
    await page.goto(server.url + '/');
    await page.waitForURL(/\/login\?next=/);
    // The provider's pages have no favicon; nothing else may fail.
    assert.deepEqual(errors.filter((e) => !e.includes('Failed to load resource')), []);
    await close();
  });
}
