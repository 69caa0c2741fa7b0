// The portal on a desktop (1440 px) and a phone (390 px), with JavaScript off and on, as an
// operator and as a member: no page is wider than the window (every page of the portal: the
// lists, a cluster page and its join page, the request, provider and template forms, the
// confirmation steps (a dead node's replacement and a rollout's abort among them), a rollout's
// previewed plan and its page, the refusals and the 404 page),
// the top bar's items are reachable (behind "Menu" on the phone), names heading table rows
// stay on one line, chart text renders at 11 px or more, severities have one colour in charts
// and tables, and no page logs a console error.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, startFakeKube, launchBrowser, newPage, loginLocal, seedOperator, submit, OPERATOR } from '../support/harness.mjs';
import { seedUser, addProvider, addTemplate, addMember, requestCluster, waitForState, overflow, assertFits, DOCUMENT_404 } from '../support/portal.mjs';

const BOB = { username: 'bob', password: 'another long password' };
const WIDTHS = [1440, 390];
const NOT_FOUND = '/no/such/page';
const ROLLOUT_PREVIEW = '/rollouts?tenant=team-a&target_version=1.34&wave_size=2&preview=1';
const installer = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'support', 'install.sh');

let server;
let browser;
let fake;
let clusterPath;
let machinesPath;
let rolloutPath;

before(async () => {
  fake = await startFakeKube(['--demo']);
  server = await startServer({
    seed: [seedOperator, ['tenant', 'create', 'team-a', '--name', 'Team Alpha'], seedUser(BOB)],
  });
  browser = await launchBrowser();

  // An imported cluster with a synced inventory (nodes, images, findings, charts), and Bob a
  // member of its tenant.
  const { page, close } = await newPage(browser, { javaScriptEnabled: false });
  await loginLocal(page, server.url);
  await addProvider(page, server.url, { kind: 'import', name: 'existing' });
  await addTemplate(page, server.url, { name: 'adopt', provider: 'existing' });
  await addMember(page, server.url, 'team-a', BOB.username);
  clusterPath = await requestCluster(page, server.url, {
    tenant: 'team-a',
    template: 'adopt',
    name: 'a-cluster-with-a-rather-long-name',
    fields: { 'f-kubeconfig': readFileSync(fake.kubeconfig, 'utf8') },
  });
  await waitForState(page, server.url, clusterPath, 'ready');
  await submit(page, '#sync-now');
  assert.equal(await page.locator('#chart-cpu svg').count(), 1, 'the inventory is synced');
  // The same cluster made by a provider that replaces nodes: its Nodes table offers
  // "Replace…" on the demo's NotReady node, whose confirmation step is among the pages.
  await addProvider(page, server.url, {
    kind: 'command', name: 'machines',
    settings: { create_command: `${installer} ${fake.kubeconfig} 0`, replace_command: '/bin/true', upgrade_command: '/bin/sleep 5' },
  });
  await addTemplate(page, server.url, { name: 'machines', provider: 'machines' });
  machinesPath = await requestCluster(page, server.url, { tenant: 'team-a', template: 'machines', name: 'machines' });
  await waitForState(page, server.url, machinesPath, 'ready');
  await submit(page, '#sync-now');
  assert.equal(await page.locator('#nodes .replace-node[data-node="node-02"]').count(), 1, 'node-02 can be replaced');
  // A rollout of team-a to 1.34 (the imported cluster left out: it cannot be upgraded),
  // paused while its one upgrade (five seconds) runs, so that its page shows Resume and
  // Abort.
  await page.goto(`${server.url}${ROLLOUT_PREVIEW}`);
  assert.ok(await page.locator('#plan-excluded tbody tr').count() > 0, 'the plan leaves a cluster out');
  await submit(page, '#start-rollout');
  rolloutPath = new URL(page.url()).pathname;
  assert.match(rolloutPath, /^\/rollouts\/[0-9a-f-]{36}$/);
  await submit(page, '#pause-rollout');
  assert.equal(await page.getAttribute('h1 [data-state]', 'data-state'), 'paused');
  // Its upgrade ends (Ready again: the node's replacement is offered again).
  await waitForState(page, server.url, machinesPath, 'ready');
  await close();
});

after(async () => {
  await browser?.close();
  await server?.stop();
  fake?.stop();
});

/**
 * Every page each kind of user can open: the lists, the cluster page and its join page, the
 * forms (with a provider kind or a template chosen, editing), the confirmation steps, and the
 * pages that answer a refusal or 404 (a member's fleet dashboard and audit log).
 */
function pages(operator) {
  const common = [
    '/', '/clusters', '/clusters/new', '/clusters/new?tenant=team-a&template=adopt', clusterPath, `${clusterPath}/join`,
    '/tenants/team-a', '/fleet', '/fleet/images', '/fleet/images/history', '/fleet/versions', '/fleet/findings', '/audit',
    '/backups', '/approvals', '/rollouts', '/tokens', NOT_FOUND,
  ];
  const operators = [
    `${clusterPath}?confirm=delete`, '/tenants/team-a?confirm=remove-member&name=bob', '/admin',
    '/providers', '/providers?kind=import', '/providers?kind=command', '/providers?kind=jenkins', '/providers?kind=hosted',
    '/providers?edit=existing', '/providers?template=adopt',
    '/providers?confirm=delete-provider&name=existing', '/providers?confirm=delete-template&name=adopt',
    '/backups?confirm=delete-backup&name=00000000-0000-7000-8000-000000000000',
    machinesPath, `${machinesPath}?confirm=replace-node&name=node-02`,
    ROLLOUT_PREVIEW, rolloutPath, `${rolloutPath}?confirm=abort`,
  ];
  return operator ? [...common, ...operators] : [...common, `${clusterPath}?confirm=revoke`];
}

/** The smallest rendered height (px) of the text in the page's charts, and how many texts. */
const chartText = (page) => page.evaluate(() => {
  const heights = [...document.querySelectorAll('figure.chart svg text')]
    .filter((t) => t.textContent.trim() !== '')
    .map((t) => {
      // The font size as rendered: the SVG font size times the chart's scale on screen.
      const svg = t.ownerSVGElement;
      const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      return parseFloat(getComputedStyle(t).fontSize) * scale;
    });
  return { count: heights.length, min: Math.min(...heights) };
});

/** Names at the head of table rows (images, nodes) that the layout split over lines. */
const splitNames = (page) => page.evaluate(() => [...document.querySelectorAll('.table th[scope=row]')]
  .map((th) => th.querySelector('code') ?? th)
  .filter((e) => {
    const range = document.createRange();
    range.selectNodeContents(e.firstChild ?? e);
    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size > 1;
  })
  .map((e) => e.textContent));

/** Waits for a page to be interactive when JavaScript runs. */
async function ready(page, js) {
  if (js) await page.waitForSelector('main[data-hydrated=true]');
}

for (const js of [false, true]) {
  for (const [who, user] of [['an operator', OPERATOR], ['a member', BOB]]) {
    test(`every page fits a desktop and a phone for ${who} and logs no error (JavaScript ${js ? 'on' : 'off'})`, async () => {
      const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: width > 1000 ? 900 : 844 });
        await page.goto(server.url + '/login');
        await ready(page, js);
        await assertFits(page, '/login');
      }
      await loginLocal(page, server.url, user);
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: width > 1000 ? 900 : 844 });
        for (const path of pages(user === OPERATOR)) {
          const res = await page.goto(server.url + path);
          assert.equal(res.status(), path === NOT_FOUND ? 404 : 200, path);
          await ready(page, js);
          await assertFits(page, path);
          if (path.includes('?confirm=replace-node')) assert.ok(await page.locator('#confirm-replace').isVisible(), `${path} shows the step`);
          if (path.endsWith('?confirm=abort')) assert.ok(await page.locator('#confirm-abort').isVisible(), `${path} shows the step`);
          assert.deepEqual(await splitNames(page), [], `${path} at ${width} px keeps each name on one line`);
          const text = await chartText(page);
          if (text.count > 0) assert.ok(text.min >= 11, `${path} at ${width} px: chart text ${text.min.toFixed(1)} px`);
          if (path === clusterPath || (path === '/fleet' && user === OPERATOR)) assert.ok(text.count > 0, `${path} has charts`);
          // (Chromium reports a document answered with 404 as a failed load: that is its status.)
          const logged = errors.splice(0).filter((e) => !(path === NOT_FOUND && e === DOCUMENT_404));
          assert.deepEqual(logged, [], `${path} at ${width} px logs no error`);
        }
      }
      await close();
    });
  }

  test(`on a phone the top bar is a menu whose items are all reachable (JavaScript ${js ? 'on' : 'off'})`, async () => {
    const { page, errors, close } = await newPage(browser, { javaScriptEnabled: js });
    await loginLocal(page, server.url);
    const items = ['Clusters', 'Providers', 'Fleet', 'Backups', 'Approvals', 'Rollouts', 'Audit', 'Admin', 'API tokens'];
    const visible = (name) => page.getByRole('link', { name, exact: true }).first().isVisible();

    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(server.url + '/clusters');
    await ready(page, js);
    assert.equal(await page.locator('#menu > summary').isVisible(), false, 'no menu toggle on a desktop');
    for (const name of items) assert.ok(await visible(name), `${name} in the bar`);

    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(server.url + '/clusters');
    await ready(page, js);
    assert.ok(await page.locator('#menu > summary').isVisible(), 'a menu toggle on a phone');
    assert.equal(await visible('Admin'), false, 'the menu starts closed');
    await page.click('#menu > summary');
    for (const name of items) {
      const box = await page.getByRole('link', { name, exact: true }).first().boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${name} is on screen`);
    }
    for (const id of ['#user-name', '#logout']) {
      const box = await page.locator(id).boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `${id} is on screen`);
    }
    // The items read on the bar's dark background (not white on the page's light one).
    const onDark = await page.evaluate(() => {
      const bar = document.querySelector('.topbar').getBoundingClientRect();
      return [...document.querySelectorAll('#menu a, #logout, #user-name')].every((e) => {
        const r = e.getBoundingClientRect();
        return r.top >= bar.top && r.bottom <= bar.bottom;
      });
    });
    assert.ok(onDark, 'every menu item lies within the top bar');
    assert.equal(await overflow(page), 0);
    await Promise.all([page.waitForURL(/\/admin$/), page.getByRole('link', { name: 'Admin', exact: true }).click()]);
    await ready(page, js);
    // The next page starts with the menu closed, also after a client-side navigation.
    await page.waitForFunction(() => !document.querySelector('#menu').open, null, { timeout: 5000 });
    assert.equal(await visible('Admin'), false, 'the menu closed');
    assert.deepEqual(errors, []);
    await close();
  });
}

test('a severity has the same colour in the findings chart and in the tables', async () => {
  const { page, errors, close } = await newPage(browser, { javaScriptEnabled: true });
  await loginLocal(page, server.url);
  for (const path of ['/fleet/findings']) {
    await page.goto(server.url + path);
    await ready(page, true);
    const colours = await page.evaluate(() => {
      const rgb = (c) => { const d = document.createElement('i'); d.style.color = c; document.body.append(d); const v = getComputedStyle(d).color; d.remove(); return v; };
      const chart = [...document.querySelectorAll('figure.chart svg')].find((s) => s.querySelector('title').textContent.startsWith('Findings'));
      const swatch = (name) => {
        const label = [...chart.querySelectorAll('text')].find((t) => t.textContent.trim() === name);
        return label && rgb(label.previousElementSibling.getAttribute('fill'));
      };
      const badge = (name) => {
        const b = document.querySelector(`.badge-sev-${name}`);
        return b && getComputedStyle(b).color;
      };
      return { chart: !!chart, high: [swatch('high'), badge('high')], medium: [swatch('medium'), badge('medium')] };
    });
    assert.ok(colours.chart, `${path} draws the findings chart`);
    for (const severity of ['high', 'medium']) {
      const [inChart, inTable] = colours[severity];
      assert.ok(inChart && inTable, `${path}: ${severity} in both`);
      assert.equal(inChart, inTable, `${path}: ${severity} is one colour`);
    }
  }
  assert.deepEqual(errors, []);
  await close();
});
