// A form whose write is refused comes back with every value as it was typed and the error next
// to its field, in plain words (no field keys, no parser text), with JavaScript off (the post is
// answered by a redirect to the form's page) and on (the page reads again in place): an
// operator's provider form, and a member's cluster request with a pasted kubeconfig, which
// comes back too (kept sealed in the session, never in a URL).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember } from '../support/portal.mjs';

const MEMBER = { username: 'devon', password: 'a long enough password' };
const NOT_A_KUBECONFIG = 'apiVersion: v1\nkind: Config\nclusters: []\n# pasted from the wrong file\n';

let server;
let browser;

before(async () => {
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
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** Clicks `selector` and waits for `errorSelector` to show (a redirect, or an in-place read). */
async function submitRefused(page, selector, errorSelector) {
  await page.click(selector);
  await page.locator(errorSelector).waitFor({ timeout: 15_000 });
}

for (const javaScriptEnabled of [false, true]) {
  const mode = javaScriptEnabled ? 'JavaScript on' : 'JavaScript off';

  test(`a refused provider keeps every value and says what is wrong at the name (${mode})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled });
    await loginLocal(page, server.url);
    await page.goto(`${server.url}/providers?kind=command`);
    if (javaScriptEnabled) await page.waitForSelector('main[data-hydrated=true]');
    const command = `/usr/local/bin/install-cluster --nodes 3 --js ${javaScriptEnabled}`;
    await page.fill('#provider-name', 'Lab Installer');
    await page.fill('#provider-description', 'The lab racks');
    await page.fill('#f-create_command', command);
    await page.fill('#f-delete_command', '/usr/local/bin/remove-cluster');
    await submitRefused(page, '#provider-submit', '#provider-name-error');

    const error = await page.locator('#provider-name-error').textContent();
    assert.match(error, /^(⚠ )?[A-Z]/, error);
    assert.doesNotMatch(error, /^(⚠ )?name:|invalid input/, error);
    assert.equal(await page.getAttribute('#provider-name', 'aria-invalid'), 'true');
    assert.match(await page.getAttribute('#provider-name', 'aria-describedby'), /provider-name-error/);
    assert.equal(await page.inputValue('#provider-name'), 'Lab Installer');
    assert.equal(await page.inputValue('#provider-description'), 'The lab racks');
    assert.equal(await page.inputValue('#f-create_command'), command);
    assert.equal(await page.inputValue('#f-delete_command'), '/usr/local/bin/remove-cluster');
    // The error is at the field, not in a banner above the page.
    assert.equal(await page.locator('#form-error').count(), 0);

    // Corrected, the same form saves, and nothing of the refused attempt lingers.
    const name = javaScriptEnabled ? 'lab-js' : 'lab';
    await page.fill('#provider-name', name);
    await page.click('#provider-submit');
    await page.locator(`#provider-table tr[data-provider="${name}"]`).waitFor({ timeout: 15_000 });
    await page.goto(`${server.url}/providers?kind=command`);
    assert.equal(await page.locator('#provider-name-error').count(), 0);
    assert.equal(await page.inputValue('#provider-name'), '');
    assert.deepEqual(errors, []);
    await close();
  });

  test(`a refused cluster request keeps the name and the pasted kubeconfig (${mode})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled });
    await loginLocal(page, server.url, MEMBER);
    await page.goto(`${server.url}/clusters/new?tenant=team-a&template=bring-your-own`);
    if (javaScriptEnabled) await page.waitForSelector('main[data-hydrated=true]');
    const name = javaScriptEnabled ? 'web-js' : 'web';
    await page.fill('#p-name', name);
    await page.fill('#f-kubeconfig', NOT_A_KUBECONFIG);
    await submitRefused(page, '#request-submit', '#f-kubeconfig-error');

    assert.equal(new URL(page.url()).pathname, '/clusters/new');
    const error = await page.locator('#f-kubeconfig-error').textContent();
    assert.doesNotMatch(error, /kubeconfig:|parameters|invalid input/, error);
    assert.equal(await page.getAttribute('#f-kubeconfig', 'aria-invalid'), 'true');
    assert.equal(await page.inputValue('#p-name'), name);
    assert.equal(await page.inputValue('#f-kubeconfig'), NOT_A_KUBECONFIG);
    // The kubeconfig never travels in the URL.
    assert.doesNotMatch(page.url(), /apiVersion|kubeconfig=/);
    // Read once: a reload shows a fresh form.
    await page.reload();
    assert.equal(await page.inputValue('#p-name'), '');
    assert.equal(await page.locator('#f-kubeconfig-error').count(), 0);
    assert.deepEqual(errors, []);
    await close();
  });
}
