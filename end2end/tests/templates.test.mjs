// Template refinements as a form: an operator narrows what tenants may ask of a provider
// (at most so many nodes, which versions, a fixed value) through inputs rendered from the
// provider's cluster schema, and the request form offers exactly that. Choosing another
// provider shows its parameters (a GET step without JavaScript, in place with it). A bad
// value (a maximum above the provider's own, a JSON typo in the advanced view) brings the
// form back with every other value kept and the error next to its input.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';
import { seedUser, addProvider, addMember } from '../support/portal.mjs';

const MEMBER = { username: 'devon', password: 'a long enough password' };

let server;
let browser;

before(async () => {
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-t', '--name', 'Team T'], seedUser(MEMBER)],
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addProvider(page, server.url, { kind: 'import', name: 'existing' });
  await addProvider(page, server.url, { kind: 'command', name: 'lab', settings: { create_command: '/bin/true' } });
  await addMember(page, server.url, 'team-t', MEMBER.username);
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

/** The request form of `template`, as the member sees it: its fields and fixed values. */
async function requestForm(page, template) {
  await page.goto(`${server.url}/clusters/new?tenant=team-t&template=${template}`);
  const fields = await page.locator('#request-form [data-param]').evaluateAll((els) => els.map((e) => e.dataset.param));
  return { fields, text: await page.locator('#request-form').textContent() };
}

/** Chooses the template form's provider: the GET step without JavaScript, in place with it. */
async function chooseProvider(page, provider, js) {
  await page.selectOption('#template-provider', provider);
  if (!js) await submit(page, '#template-provider-step');
  await page.locator(`#template-form input[name=o_for][value="${provider}"]`).waitFor({ state: 'attached' });
}

/**
 * Saves the template form and waits for `selector` (a table row, an error): a page load
 * without JavaScript, in place with it.
 */
async function save(page, selector, js) {
  if (js) await Promise.all([page.waitForResponse((r) => r.url().includes('/sfn/providers')), page.click('#template-submit')]);
  else await submit(page, '#template-submit');
  await page.locator(selector).first().waitFor({ timeout: 15_000 }).catch(async () => {
    const said = await page.locator('#form-error, .field-error').allTextContents();
    assert.fail(`${selector} after saving: ${said.join(' ') || 'nothing'}`);
  });
}

/** Asserts the template form holds `values` (by input id). */
async function assertKept(page, values) {
  for (const [id, value] of Object.entries(values)) assert.equal(await page.inputValue(`#${id}`), value, id);
}

for (const js of [false, true]) {
  const on = js ? 'on' : 'off';
  const suffix = js ? '-js' : '';

  test(`an operator refines a template through the form and the request form offers exactly that (JavaScript ${on})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    await page.goto(server.url + '/providers');
    if (js) await page.waitForSelector('main[data-hydrated=true]');

    // The form shows the chosen provider's parameters: import asks for a context, not nodes.
    await chooseProvider(page, 'existing', js);
    assert.equal(await page.locator('#r-context-default').count(), 1);
    assert.equal(await page.locator('#r-node_count-max').count(), 0, 'no node count for an import');
    const before = js ? await page.evaluate(() => (window.kqMarker = 1)) : null;
    await page.fill('#template-name', `small${suffix}`);
    await chooseProvider(page, 'lab', js);
    if (js) assert.equal(await page.evaluate(() => window.kqMarker), before, 'in place, no reload');
    // Without JavaScript the step carried what was typed.
    assert.equal(await page.inputValue('#template-name'), `small${suffix}`);
    assert.equal(await page.getAttribute('#r-node_count-max', 'placeholder'), '100');

    await page.fill('#template-description', 'Small lab clusters');
    await page.fill('#r-node_count-max', '5');
    await page.fill('#r-node_count-default', '2');
    await page.fill('#r-kubernetes_version-choices', '1.33, 1.34');
    await page.fill('#r-kubernetes_version-default', '1.34');
    await page.fill('#template-tenants', 'team-t');
    await save(page, `#template-table tr[data-template="small${suffix}"]`, js);
    const row = page.locator(`#template-table tr[data-template="small${suffix}"]`);
    assert.match(await row.locator('td').nth(2).textContent(), /node_count \(1–5\)/);

    // A fixed value: tenants are not asked for it.
    await page.fill('#template-name', `three${suffix}`);
    await chooseProvider(page, 'lab', js);
    await page.fill('#r-node_count-fixed', '3');
    await save(page, `#template-table tr[data-template="three${suffix}"]`, js);

    // Editing pre-fills the form from the template's refinements.
    await page.goto(`${server.url}/providers?template=small${suffix}`);
    if (js) await page.waitForSelector('main[data-hydrated=true]');
    await assertKept(page, {
      'r-node_count-max': '5',
      'r-node_count-default': '2',
      'r-node_count-min': '',
      'r-kubernetes_version-choices': '1.33, 1.34',
      'r-kubernetes_version-default': '1.34',
    });
    assert.deepEqual(errors, []);
    await close();

    const member = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(member.page, server.url, MEMBER);
    const small = await requestForm(member.page, `small${suffix}`);
    assert.deepEqual(small.fields, ['node_count', 'kubernetes_version']);
    assert.equal(await member.page.getAttribute('#f-node_count', 'max'), '5');
    assert.equal(await member.page.getAttribute('#f-node_count', 'min'), '1');
    assert.equal(await member.page.inputValue('#f-node_count'), '2');
    assert.deepEqual(await member.page.locator('#f-kubernetes_version option').allTextContents(), ['1.33', '1.34']);
    assert.equal(await member.page.inputValue('#f-kubernetes_version'), '1.34');
    const three = await requestForm(member.page, `three${suffix}`);
    assert.deepEqual(three.fields, ['kubernetes_version']);
    assert.match(three.text, /Set by the template: node_count = 3/);
    assert.deepEqual(member.errors, []);
    await member.close();
  });

  test(`a template with a bad value comes back with every other value kept and the error at its field (JavaScript ${on})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    await page.goto(server.url + '/providers');
    if (js) await page.waitForSelector('main[data-hydrated=true]');
    await chooseProvider(page, 'lab', js);
    const typed = {
      'template-name': `wide${suffix}`,
      'template-description': 'More nodes than the provider allows',
      'r-node_count-max': '1000',
      'r-node_count-default': '4',
      'r-kubernetes_version-choices': '1.34',
      'template-tenants': 'team-t',
      'template-timeout': '90',
    };
    for (const [id, value] of Object.entries(typed)) await page.fill(`#${id}`, value);
    await page.selectOption('#template-admin-access', 'cluster-admin');
    await page.check('#template-form input[name=disabled]');
    await save(page, '#r-node_count-max-error', js);
    assert.equal(await page.locator('#r-node_count-max-error').textContent(), "The maximum cannot be above 100, the provider's own");
    assert.equal(await page.getAttribute('#r-node_count-max', 'aria-invalid'), 'true');
    assert.match(await page.getAttribute('#r-node_count-max', 'aria-describedby'), /r-node_count-max-error/);
    assert.equal(await page.locator('.field-error').count(), 1, 'one error, at its field');
    assert.equal(await page.locator('#form-error').count(), 0, 'no banner');
    await assertKept(page, typed);
    assert.equal(await page.inputValue('#template-provider'), 'lab');
    assert.equal(await page.inputValue('#template-admin-access'), 'cluster-admin');
    assert.ok(await page.isChecked('#template-form input[name=disabled]'));
    assert.equal(await page.locator(`#template-table tr[data-template="wide${suffix}"]`).count(), 0);

    // A default outside the narrowed range: said at the default.
    await page.fill('#r-node_count-max', '3');
    await save(page, '#r-node_count-default-error', js);
    assert.equal(await page.locator('#r-node_count-default-error').textContent(), 'The default must be from 1 to 3');
    await assertKept(page, { ...typed, 'r-node_count-max': '3' });

    // A typo in the advanced JSON view: the error is at the JSON, in plain words.
    await page.fill('#r-node_count-default', '');
    await page.click('#template-json summary');
    await page.fill('#template-overrides', '{"node_count": {"max": 5,}}');
    await save(page, '#template-overrides-error', js);
    assert.match(await page.locator('#template-overrides-error').textContent(), /^Is not valid JSON \(line 1, column \d+\)$/);
    assert.ok(await page.locator('#template-json').evaluate((d) => d.open), 'the advanced view is open');
    assert.equal(await page.inputValue('#template-overrides'), '{"node_count": {"max": 5,}}');
    await assertKept(page, { ...typed, 'r-node_count-max': '3', 'r-node_count-default': '' });

    // Valid JSON, but the form's refinements were changed too and say otherwise: nothing is
    // saved until one of them is undone.
    await page.fill('#template-overrides', '{"node_count": {"max": 5}}');
    await save(page, '#template-overrides-error:has-text("changed both")', js);
    assert.equal(await page.inputValue('#r-node_count-max'), '3');
    assert.equal(await page.inputValue('#template-overrides'), '{"node_count": {"max": 5}}');
    await page.fill('#r-node_count-max', '');
    await page.fill('#r-kubernetes_version-choices', '');
    // The JSON (changed, not empty) is what counts.
    await save(page, `#template-table tr[data-template="wide${suffix}"]`, js);
    const row = page.locator(`#template-table tr[data-template="wide${suffix}"]`);
    assert.match(await row.locator('td').nth(2).textContent(), /node_count \(1–5\)/);
    assert.deepEqual(errors, []);
    await close();
  });
}
