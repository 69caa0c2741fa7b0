// The first-run path, with JavaScript off and on, each on an empty installation: the operator
// sees a checklist on the overview, follows its links to create a tenant, a provider, a
// template and a user (invited with a one-time link), adds the user to the tenant from the
// known users, and the checklist goes away; the invitee opens the link signed out, sets a
// password, signs in, and finds the tenant.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';

const INVITEE = { username: 'dev', password: 'a long enough password' };

let browser;
const servers = [];

after(async () => {
  await browser?.close();
  for (const s of servers) await s.stop();
});

/** The checklist's steps as { step: done }, or null when it is not shown. */
async function checklist(page) {
  if ((await page.locator('#first-run').count()) === 0) return null;
  const steps = {};
  for (const li of await page.locator('#first-run li[data-step]').all()) {
    steps[await li.getAttribute('data-step')] = (await li.getAttribute('data-done')) === 'true';
  }
  return steps;
}

/** Submits a form and waits for `selector` to show up (a redirect, or an in-place update). */
async function submitUntil(page, button, selector, js) {
  if (js) {
    await page.click(button);
    await page.waitForSelector(selector, { timeout: 15_000 });
  } else {
    await submit(page, button);
  }
  const errors = await page.locator('#form-error').allTextContents();
  assert.ok((await page.locator(selector).count()) > 0, `${selector} after ${button}: ${errors.join(' ')}`);
}

/** Follows the checklist's link of `step` from the overview. */
async function follow(page, url, step) {
  await page.goto(url + '/');
  const link = page.locator(`#first-run li[data-step="${step}"] a`);
  const href = await link.getAttribute('href');
  await link.click();
  await page.waitForURL((u) => u.pathname === href.split('#')[0]);
}

for (const js of [false, true]) {
  test(`first run (JavaScript ${js ? 'on' : 'off'}): checklist, invitation, password, sign-in`, async () => {
    const server = await startServer({ seed: [seedOperator] });
    servers.push(server);
    browser ??= await launchBrowser();
    const url = server.url;
    const op = await newPage(browser, { javaScriptEnabled: js });
    const { page } = op;
    const missing = [];
    page.on('response', (r) => { if (r.status() === 404) missing.push(r.url()); });
    await loginLocal(page, url);

    // Nothing set up: every step to do, and the empty tenant list says what to do.
    await page.goto(url + '/');
    if (js) await page.waitForSelector('main[data-hydrated="true"]');
    assert.deepEqual(await checklist(page), { tenant: false, provider: false, template: false, people: false });
    assert.match(await page.locator('#no-tenant').textContent(), /no tenants yet/);
    await page.goto(url + '/clusters/new');
    assert.equal(await page.locator('#no-tenant a[href="/admin"]').count(), 1, 'the request page says why it is empty');

    // 1. A tenant, from the Admin page the checklist links to.
    await follow(page, url, 'tenant');
    await page.fill('#tenant-slug', 'team-a');
    await page.fill('#tenant-name', 'Team A');
    if (js) {
      await Promise.all([page.waitForURL(/\/tenants\/team-a$/), page.click('#create-tenant button[type=submit]')]);
    } else {
      await submit(page, '#create-tenant button[type=submit]');
      assert.match(page.url(), /\/tenants\/team-a$/);
    }

    // 2. A provider and 3. a template, on the Providers page.
    await follow(page, url, 'provider');
    await page.goto(url + '/providers?kind=import');
    await page.fill('#provider-name', 'existing');
    await submitUntil(page, '#provider-submit', '#provider-table tr[data-provider="existing"]', js);
    await follow(page, url, 'template');
    await page.fill('#template-name', 'bring-your-own');
    await page.selectOption('#template-provider', 'existing');
    await submitUntil(page, '#template-submit', '#template-table tr[data-template="bring-your-own"]', js);
    await page.goto(url + '/');
    assert.deepEqual(await checklist(page), { tenant: true, provider: true, template: true, people: false });

    // 4. A user, invited: the link is shown once.
    await follow(page, url, 'people');
    await page.fill('#new-user-name', INVITEE.username);
    await page.fill('#user-display', 'Dev Eloper');
    await submitUntil(page, '#create-user-submit', '#invite-link', js);
    const link = (await page.locator('#invite-link').textContent()).trim();
    assert.match(link, new RegExp(`^${url}/invite/kqi_[A-Za-z0-9_-]+$`));
    assert.equal(await page.locator('#user-table tr[data-user="dev"] [data-status="invited"]').count(), 1);
    await page.reload();
    assert.equal(await page.locator('#invite-link').count(), 0, 'the link is shown only once');

    // The member form offers the known user; adding them completes the checklist.
    await page.goto(url + '/tenants/team-a');
    assert.equal(await page.locator('#member-username').getAttribute('list'), 'known-users');
    assert.equal(await page.locator('#known-users option[value="dev"]').count(), 1);
    assert.match(await page.locator('#member-username-help').textContent(), /not signed in yet/);
    await page.fill('#member-username', INVITEE.username);
    await submitUntil(page, '#add-member button[type=submit]', '#member-table tr[data-member="dev"]', js);
    await page.goto(url + '/');
    assert.equal(await checklist(page), null, 'everything is set up: no checklist');
    assert.deepEqual(op.errors, [], `no console errors for the operator (404: ${missing.join(' ')})`);

    // The invitee, signed out, opens the link and sets a password.
    const invitee = await newPage(browser, { javaScriptEnabled: js });
    const p = invitee.page;
    await p.goto(link);
    if (js) await p.waitForSelector('main[data-hydrated="true"]');
    assert.equal(new URL(p.url()).pathname.startsWith('/invite/'), true, 'no login needed');
    assert.equal((await p.locator('#invite-username').textContent()).trim(), INVITEE.username);
    await p.fill('#new-password', INVITEE.password);
    await p.fill('#new-password-again', INVITEE.password);
    await Promise.all([p.waitForNavigation(), p.click('#accept-submit')]);
    if (js) await p.waitForURL(/\/login\?welcome=dev$/);
    assert.match(p.url(), /\/login\?welcome=dev$/, (await p.content()).slice(0, 3000));
    assert.equal(await p.inputValue('#username'), INVITEE.username);
    await p.fill('#password', INVITEE.password);
    await Promise.all([p.waitForNavigation(), p.click('#local-login button[type=submit]')]);
    assert.equal(new URL(p.url()).pathname, '/', `signed in: ${p.url()} ${await p.content()}`);
    await p.goto(url + '/');
    assert.equal(await p.locator('#tenant-table tr[data-tenant="team-a"]').count(), 1, 'the invitee is in team-a');
    assert.equal(await checklist(p), null, 'members see no checklist');
    // The link worked once.
    const again = await p.goto(link);
    assert.equal(again.status(), 404);
    assert.equal(await p.locator('#invite-invalid').count(), 1);
    assert.deepEqual(invitee.errors.filter((e) => !e.includes('404')), [], 'no console errors for the invitee');
    await invitee.close();
    await op.close();
  });
}
