// What several browser tests set up the same way, through the portal's own forms (JavaScript
// off: each form posts and the page that comes back is read): an operator's providers,
// templates and tenant members, a member's cluster request, waiting for a cluster's state;
// and the layout checks (is a page wider than the window, and why).
import assert from 'node:assert/strict';
import { submit } from './harness.mjs';

/** A seed entry (see startServer) creating the local account `user` (not an operator). */
export const seedUser = ({ username, password }) => ({
  args: ['user', 'create', username, '--password-stdin'],
  input: `${password}\n`,
});

/** The page's form error, if any (to say why a step failed). */
const formError = async (page) => (await page.locator('#form-error').allTextContents()).join(' ');

/**
 * An operator's page defines a provider of `kind` named `name`; `settings` fills the kind's
 * fields by name (`#f-<name>`).
 */
export async function addProvider(page, url, { kind, name, description, settings = {} }) {
  await page.goto(`${url}/providers?kind=${kind}`);
  await page.fill('#provider-name', name);
  if (description) await page.fill('#provider-description', description);
  for (const [field, value] of Object.entries(settings)) await page.fill(`#f-${field}`, value);
  await submit(page, '#provider-submit');
  assert.equal(await page.locator(`#provider-table tr[data-provider="${name}"]`).count(), 1, `provider ${name}: ${await formError(page)}`);
}

/** An operator's page defines a template on `provider`, offered to `tenants` (all if unset). */
export async function addTemplate(page, url, { name, provider, tenants, adminAccess }) {
  await page.goto(`${url}/providers`);
  await page.fill('#template-name', name);
  await page.selectOption('#template-provider', provider);
  if (tenants) await page.fill('#template-tenants', tenants);
  if (adminAccess) await page.selectOption('#template-admin-access', adminAccess);
  await submit(page, '#template-submit');
  assert.equal(await page.locator(`#template-table tr[data-template="${name}"]`).count(), 1, `template ${name}: ${await formError(page)}`);
}

/** An operator's page adds `username` to the tenant `slug`. */
export async function addMember(page, url, slug, username, role = 'member') {
  await page.goto(`${url}/tenants/${slug}`);
  await page.fill('#member-username', username);
  await page.selectOption('#member-role', role);
  await submit(page, '#add-member button[type=submit]');
  assert.equal(await page.locator(`#member-table tr[data-member="${username}"]`).count(), 1, `member ${username}: ${await formError(page)}`);
}

/**
 * Requests cluster `name` from `template` in `tenant` through the request form (`fields`:
 * the template's parameters by id, e.g. { 'f-kubeconfig': '…' }). Returns the cluster page's
 * path, where the form leads.
 */
export async function requestCluster(page, url, { tenant, template, name, fields = {} }) {
  await page.goto(`${url}/clusters/new?tenant=${tenant}&template=${template}`);
  await page.fill('#p-name', name);
  for (const [id, value] of Object.entries(fields)) await page.fill(`#${id}`, value);
  await Promise.all([page.waitForURL(/\/clusters\/[0-9a-f-]{36}$/), page.click('#request-submit')]);
  return new URL(page.url()).pathname;
}

/** The state a cluster page shows (`provisioning`, `ready`…; '' when there is no cluster). */
export async function stateOf(page) {
  const badge = page.locator('h1 [data-state]');
  return (await badge.count()) ? badge.getAttribute('data-state') : '';
}

/** Reloads the cluster page `path` until it shows `state` (any other end state fails). */
export async function waitForState(page, url, path, state, { timeout = 30_000 } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    await page.goto(url + path);
    const now = await stateOf(page);
    if (now === state) return;
    assert.notEqual(now, 'error', (await page.locator('#cluster-error').allTextContents()).join(' '));
    assert.ok(Date.now() < deadline, `${path} is still ${now}, not ${state}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * What Chromium logs (see newPage's errors) for a document answered with 404: its status, not
 * an error of the page's.
 */
export const DOCUMENT_404 = 'console: Failed to load resource: the server responded with a status of 404 (Not Found)';

/** How much wider than the window the page is (0: it fits). */
export const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

/** The outermost elements reaching past the window's right edge, to say why a page is wide. */
export const culprits = (page) => page.evaluate(() => {
  const past = (e) => e.getBoundingClientRect().right > window.innerWidth + 0.5;
  const scrolls = (e) => e && ['auto', 'scroll', 'hidden'].includes(getComputedStyle(e).overflowX);
  const contained = (e) => { for (let a = e.parentElement; a; a = a.parentElement) if (scrolls(a)) return true; return false; };
  return [...document.querySelectorAll('body, body *')]
    .filter((e) => e.checkVisibility() && past(e) && !contained(e))
    .filter((e) => !(e.parentElement && past(e.parentElement)))
    .slice(0, 5)
    .map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}.${[...e.classList].join('.')} (right ${Math.round(e.getBoundingClientRect().right)})`);
});

/** Asserts the page is no wider than the window, naming what sticks out if it is. */
export async function assertFits(page, what) {
  const wider = await overflow(page);
  const width = page.viewportSize()?.width;
  assert.equal(wider, 0, `${what} at ${width} px is ${wider} px wider than the window: ${wider && (await culprits(page)).join(', ')}`);
}
