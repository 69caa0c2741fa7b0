// Upgrades in waves in the browser, once with JavaScript off and once on. A `command`
// provider whose upgrade command takes three seconds and fails for every cluster named `b1`
// makes six clusters in each of team-a and team-b (a1 a2 b1 b2 c1 at 1.33, `done` at 1.34);
// the server's periodic rollout turn comes every second (KQUEEN_ROLLOUT_INTERVAL_SECONDS).
// An operator's form refuses target version "abc" and wave size 0 at their fields, previews
// the plan of 5 clusters in 3 waves of 2 with `done` left out (it runs 1.34 already), starts
// it and watches the waves move (a reload without JavaScript; the page updating itself with
// it): wave 2 under way while wave 3 waits, then Paused at b1's failure with its reason and
// wave 3 still waiting; Resume completes it ("4 upgraded, 1 failed"). A member of team-a sees
// no Rollouts entry and is refused; team-a's admin sees only team-a's rollouts, offers only
// team-a, starts a rollout of their own (a second tab's start of the same is refused with the
// conflict above the form), pauses it and aborts it after its confirmation step.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, startFakeKube, launchBrowser, newPage, loginLocal, seedOperator, submit } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember, requestCluster, waitForState, DOCUMENT_404 } from '../support/portal.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const installer = join(repo, 'end2end', 'support', 'install.sh');
const MEMBER = { username: 'mira', password: 'a long enough password' };
const ADMIN = { username: 'otto', password: 'another long password' };
const CLUSTERS = ['a1', 'a2', 'b1', 'b2', 'c1'];
const UUID = /\/rollouts\/([0-9a-f-]{36})$/;

let fake;
let server;
let browser;
let work;
/** The rollout each mode started, by tenant. */
const started = {};

before(async () => {
  work = mkdtempSync(join(tmpdir(), 'kqueen-e2e-rollouts-'));
  const upgrade = join(work, 'upgrade.sh');
  writeFileSync(upgrade, [
    '#!/bin/sh',
    'sleep 3',
    'if [ "$KQ_CLUSTER_NAME" = b1 ]; then',
    '  echo "the new control plane of b1 did not become ready" >&2',
    '  exit 3',
    'fi',
    'echo "upgraded $KQ_CLUSTER_NAME to $KQ_KUBERNETES_VERSION"',
    '',
  ].join('\n'));
  chmodSync(upgrade, 0o755);
  fake = await startFakeKube();
  server = await startServer({
    seed: [
      seedOperator,
      ['tenant', 'create', 'team-a', '--name', 'Team Alpha'],
      ['tenant', 'create', 'team-b', '--name', 'Team Beta'],
      seedUser(MEMBER),
      seedUser(ADMIN),
    ],
    env: { KQUEEN_ROLLOUT_INTERVAL_SECONDS: '1' },
  });
  browser = await launchBrowser();
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addProvider(page, server.url, {
    kind: 'command', name: 'lab', settings: { create_command: `${installer} ${fake.kubeconfig} 0`, upgrade_command: upgrade },
  });
  await addTemplate(page, server.url, { name: 'small', provider: 'lab' });
  await addMember(page, server.url, 'team-a', MEMBER.username);
  await addMember(page, server.url, 'team-a', ADMIN.username, 'admin');
  const paths = [];
  for (const tenant of ['team-a', 'team-b']) {
    for (const name of CLUSTERS) paths.push(await requestCluster(page, server.url, { tenant, template: 'small', name }));
    paths.push(await requestCluster(page, server.url, { tenant, template: 'small', name: 'done', fields: { 'f-kubernetes_version': '1.34' } }));
  }
  for (const path of paths) await waitForState(page, server.url, path, 'ready', { timeout: 60_000 });
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Opens `path` and, with JavaScript, waits until the page is interactive. */
async function open(page, js, path) {
  const res = await page.goto(server.url + path);
  if (js) await page.waitForSelector('main[data-hydrated=true]');
  return res;
}

/**
 * Presses "Preview plan" (a page load without JavaScript, in place with it) and waits for
 * `expected`, what the answer shows.
 */
async function preview(page, js, expected) {
  if (js) await page.click('#preview-plan');
  else await submit(page, '#preview-plan');
  await page.waitForSelector(expected, { timeout: 20_000 });
}

/** The names in each wave table of the previewed plan. */
const planWaves = (page) => page.locator('#plan table.plan-wave').evaluateAll((tables) => tables
  .map((t) => [...t.querySelectorAll('tbody tr')].map((r) => r.dataset.cluster)));

/** The rollout page's state badge. */
const stateOf = (page) => page.getAttribute('h1 [data-state]', 'data-state');

/**
 * Waits until the rollout page shows what `ready` wants: reloading without JavaScript, only
 * watching with it (the page reads itself again while the rollout moves).
 */
async function until(page, js, path, what, ready, timeout = 60_000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (!js) await open(page, js, path);
    if (await ready()) return;
    assert.ok(Date.now() < deadline, `${path}: no ${what} (state ${await stateOf(page)}: ${await page.locator('main').textContent()})`);
    await page.waitForTimeout(js ? 200 : 400);
  }
}

const waveState = (page, n) => page.getAttribute(`#wave-${n}`, 'data-wave-state');
const memberState = (page, name) => page.getAttribute(`.rollout-wave-table tr[data-cluster=${name}]`, 'data-state');

for (const js of [false, true]) {
  const tenant = js ? 'team-b' : 'team-a';
  test(`an operator previews, starts, follows and resumes a rollout (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    await open(page, js, '/rollouts');
    assert.ok(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts', exact: true }).isVisible());
    // Operators may roll out across the fleet or in any tenant.
    assert.deepEqual(await page.locator('#rollout-tenant option').allTextContents(), ['Whole fleet', 'team-a', 'team-b']);
    assert.equal(await page.inputValue('#rollout-wave-size'), '2');

    // Refusals come back at their field, with the form as typed.
    await page.selectOption('#rollout-tenant', tenant);
    await page.selectOption('#rollout-provider', 'lab');
    await page.fill('#rollout-target', 'abc');
    await preview(page, js, '#rollout-target-error');
    assert.match(await page.textContent('#rollout-target-error'), /Must look like 1\.34 or v1\.34\.2/);
    assert.equal(await page.getAttribute('#rollout-target', 'aria-invalid'), 'true');
    assert.equal(await page.inputValue('#rollout-target'), 'abc');
    assert.equal(await page.inputValue('#rollout-tenant'), tenant);
    assert.equal(await page.locator('#plan').count(), 0);
    await page.fill('#rollout-target', '1.34');
    await page.fill('#rollout-wave-size', '0');
    await preview(page, js, '#rollout-wave-size-error');
    assert.match(await page.textContent('#rollout-wave-size-error'), /Must be between 1 and 100/);
    assert.equal(await page.locator('#rollout-target-error').count(), 0);
    assert.equal(await page.inputValue('#rollout-provider'), 'lab');

    // The plan: 5 clusters in waves of 2, `done` left out with why.
    await page.fill('#rollout-wave-size', '2');
    await preview(page, js, '#plan');
    assert.deepEqual(await planWaves(page), [['a1', 'a2'], ['b1', 'b2'], ['c1']]);
    assert.match(await page.textContent('#plan-summary'), /^5 cluster\(s\) in 3 wave\(s\) of up to 2; 1 left out/);
    const left = page.locator('#plan-excluded tbody tr');
    assert.deepEqual(await left.evaluateAll((rows) => rows.map((r) => r.dataset.cluster)), ['done']);
    assert.match(await left.textContent(), /it runs 1\.34 already/);
    assert.ok((await page.locator('#plan-wave-1 tr[data-cluster=a1]').textContent()).includes(tenant));

    // Started: the rollout's page, its first wave under way.
    await Promise.all([page.waitForURL(UUID, { timeout: 20_000 }), page.click('#start-rollout')]);
    const path = new URL(page.url()).pathname;
    started[tenant] = path.match(UUID)[1];
    if (js) await page.waitForSelector('main[data-hydrated=true]');
    assert.equal(await stateOf(page), 'running');
    assert.match(await page.textContent('#rollout-facts'), new RegExp(`Tenant ${tenant}, provider lab; waves of 2; started .* by admin`));
    assert.equal(await page.locator('#pause-rollout').count(), 1);

    // The waves move on: the second under way while the third waits…
    await until(page, js, path, 'second wave under way', async () => (await waveState(page, 2)) === 'under way');
    assert.equal(await waveState(page, 1), 'ended');
    assert.equal(await waveState(page, 3), 'waiting');
    assert.deepEqual([await memberState(page, 'a1'), await memberState(page, 'a2')], ['upgraded', 'upgraded']);
    assert.equal(await page.textContent('#rollout-wave'), 'Wave 2 of 3');

    // …until b1's upgrade fails: paused with its reason, wave 3 still waiting.
    await until(page, js, path, 'pause', async () => (await stateOf(page)) === 'paused');
    assert.match(await page.textContent('#rollout-reason'), /^Wave 2 of 3: b1: .*did not become ready/);
    assert.equal(await memberState(page, 'b1'), 'failed');
    assert.match(await page.textContent('.rollout-wave-table tr[data-cluster=b1] .member-reason'), /did not become ready/);
    assert.equal(await memberState(page, 'c1'), 'waiting');
    assert.equal(await waveState(page, 3), 'waiting');
    assert.equal(await page.locator('#pause-rollout').count(), 0);
    assert.equal(await page.locator('#abort-rollout').count(), 1);
    assert.equal(await page.getAttribute('.rollout-wave-table tr[data-cluster=b1] a.member-timeline', 'href'),
      await page.getAttribute('.rollout-wave-table tr[data-cluster=b1] th a', 'href') + '#timeline');

    // Resume: b1 stays failed (it is in Error), the third wave runs, the rollout completes.
    if (js) await page.click('#resume-rollout');
    else await submit(page, '#resume-rollout');
    await until(page, js, path, 'completion', async () => (await stateOf(page)) === 'completed');
    assert.equal(await page.textContent('#rollout-reason'), '4 upgraded, 1 failed');
    assert.equal(await page.textContent('#rollout-progress-percent'), '100% done');
    assert.match(await page.textContent('#rollout-progress-counts'), /^4 upgraded · 1 failed · 0 skipped · 0 waiting$/);
    assert.equal(await memberState(page, 'c1'), 'upgraded');
    assert.equal(await page.locator('#rollout-actions').count(), 0);

    // The list: newest first, with its scope, state, wave and progress.
    await open(page, js, '/rollouts');
    const row = page.locator(`#rollout-list tr[data-rollout="${started[tenant]}"]`);
    assert.equal(await row.getAttribute('data-state'), 'completed');
    assert.equal(await row.locator('.rollout-scope').textContent(), `Tenant ${tenant}, provider lab`);
    assert.equal(await row.locator('.rollout-wave').textContent(), '3 of 3');
    assert.equal(await row.locator('progress').getAttribute('value'), '100');
    assert.equal(await page.locator('#rollout-list tbody tr').first().getAttribute('data-rollout'), started[tenant]);
    assert.deepEqual(errors, []);
    await close();
  });
}

test('a member sees no Rollouts and is refused (JavaScript off)', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url, MEMBER);
  await page.goto(server.url + '/rollouts');
  const nav = page.getByRole('navigation', { name: 'Main' });
  assert.equal(await nav.getByRole('link', { name: 'Rollouts', exact: true }).count(), 0);
  assert.match(await page.locator('main').textContent(), /permission denied/);
  assert.equal(await page.locator('main form').count(), 0, 'no form');
  await page.goto(`${server.url}/rollouts/${started['team-a']}`);
  assert.match(await page.locator('main').textContent(), /permission denied/);
  assert.equal(await page.locator('#rollout-actions').count(), 0);
  assert.deepEqual(errors, []);
  await close();
});

test('a tenant admin sees and starts rollouts of their tenant only, pauses and aborts one (JavaScript on)', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url, ADMIN);
  await open(page, true, '/rollouts');
  assert.deepEqual(await page.locator('#rollout-list tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.rollout)), [started['team-a']]);
  assert.deepEqual(await page.locator('#rollout-tenant option').allTextContents(), ['team-a'], 'no whole fleet, no other tenant');
  // Another tenant's rollout is not found.
  assert.equal((await page.goto(`${server.url}/rollouts/${started['team-b']}`)).status(), 404);

  // A rollout of their own to 1.35, one cluster at a time (b1 is in Error: left out).
  await open(page, true, '/rollouts');
  await page.fill('#rollout-target', '1.35');
  await page.fill('#rollout-wave-size', '1');
  await preview(page, true, '#plan');
  assert.deepEqual(await planWaves(page), [['a1'], ['a2'], ['b2'], ['c1'], ['done']]);
  assert.match(await page.textContent('#plan-excluded tr[data-cluster=b1]'), /it is Error/);
  // A second tab (JavaScript off) shows the same preview.
  const other = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(other.page, server.url, ADMIN);
  await other.page.goto(server.url + new URL(page.url()).pathname + new URL(page.url()).search);
  assert.equal(await other.page.locator('#plan table.plan-wave').count(), 5);
  await Promise.all([page.waitForURL(UUID, { timeout: 20_000 }), page.click('#start-rollout')]);
  const path = new URL(page.url()).pathname;
  // Started there, the same rollout is refused here: the conflict is said above the form.
  await submit(other.page, '#start-rollout');
  assert.match(await other.page.textContent('#form-error'), /^No cluster would be upgraded to 1\.35: .*a1: it is in rollout/);
  assert.equal(await other.page.locator('#start-rollout').count(), 0, 'the plan, made again, upgrades nothing');
  assert.deepEqual(other.errors, []);
  await other.close();
  await page.waitForSelector('main[data-hydrated=true]');
  await page.click('#pause-rollout');
  await page.waitForSelector('h1 [data-state=paused]');
  assert.match(await page.textContent('#rollout-reason'), /^Paused by otto/);

  // Abort asks first; Cancel leaves it paused, the confirmed abort skips the waiting clusters.
  await page.click('#abort-rollout');
  await page.waitForSelector('#confirm-abort');
  assert.match(await page.textContent('#confirm-abort'), /still waiting are skipped/);
  await page.click('#confirm-abort-cancel');
  await page.waitForURL((u) => u.pathname === path && !u.search.includes('confirm'));
  assert.equal(await page.locator('#confirm-abort').count(), 0);
  assert.equal(await stateOf(page), 'paused');
  await page.click('#abort-rollout');
  await page.click('#confirm-abort-submit');
  await page.waitForSelector('h1 [data-state=aborted]');
  await page.waitForFunction(() => !document.querySelector('#confirm-abort'));
  assert.match(await page.textContent('#rollout-reason'), /^Aborted by otto/);
  // a1 was under way and finishes; every cluster still waiting is skipped.
  await until(page, true, path, 'the end of a1', async () => (await memberState(page, 'a1')) !== 'upgrading');
  for (const name of ['a2', 'b2', 'c1', 'done']) assert.equal(await memberState(page, name), 'skipped', name);
  assert.equal(await page.locator('#rollout-actions').count(), 0);
  // (Chromium logs the other tenant's rollout, answered with 404, as a failed load.)
  assert.deepEqual(errors.filter((e) => e !== DOCUMENT_404), []);
  await close();
});
