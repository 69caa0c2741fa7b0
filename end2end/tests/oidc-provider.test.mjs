// Proves the test OpenID Provider (end2end/oidc/provider.mjs) works without a
// browser: discovery, authorization code + PKCE with our login/consent pages,
// token exchange, userinfo, code replay and PKCE failures, RP-initiated logout.
//
// Only fetch with manual redirects and a tiny name-keyed cookie jar — the same
// recipe a Rust (reqwest, redirects disabled) integration test follows.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';

import { startProvider } from '../oidc/provider.mjs';

const CLIENT_ID = 'kqueen';
const CLIENT_SECRET = 'kqueen-secret';
const REDIRECT_URI = 'http://127.0.0.1:45678/auth/callback';
const POST_LOGOUT_URI = 'http://127.0.0.1:45678/logged-out';

let op;
let discovery;

before(async () => {
  op = await startProvider({ port: 0, log: () => {} });
});

after(async () => {
  await op?.close();
});

/** Cookie jar keyed by cookie name (ignores Path, like a minimal client). */
class Jar {
  #cookies = new Map();

  store(response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      const expired = attrs.some((a) => {
        const [k, v = ''] = a.split('=').map((s) => s.trim());
        if (/^max-age$/i.test(k)) return Number(v) <= 0;
        if (/^expires$/i.test(k)) return Date.parse(v) <= Date.now();
        return false;
      });
      if (expired || value === '') this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }

  header() {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  names() {
    return [...this.#cookies.keys()];
  }
}

async function request(jar, url, init = {}) {
  const headers = new Headers(init.headers);
  const cookie = jar.header();
  if (cookie) headers.set('cookie', cookie);
  const res = await fetch(url, { ...init, headers, redirect: 'manual' });
  jar.store(res);
  return res;
}

function postForm(jar, url, fields) {
  return request(jar, url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
}

const b64url = (buf) => Buffer.from(buf).toString('base64url');

function pkcePair() {
  const verifier = b64url(randomBytes(32));
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

function decodeJwtPayload(jwt) {
  const [, payload] = jwt.split('.');
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
}

function basicAuth(id, secret) {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

function formAction(body) {
  const m = /<form[^>]*method="post"[^>]*action="([^"]+)"/i.exec(body);
  assert.ok(m, `no POST form in page:\n${body}`);
  return m[1];
}

/**
 * Follows redirects (resolving relative Locations against the provider) until
 * a 200 page or a redirect to `stopPrefix`.  Returns { response, body, location }.
 */
async function follow(jar, response, stopPrefix) {
  let res = response;
  for (let hops = 0; hops < 10; hops += 1) {
    if (res.status >= 300 && res.status < 400) {
      const location = new URL(res.headers.get('location'), op.issuer).href;
      await res.arrayBuffer();
      if (location.startsWith(stopPrefix)) return { response: res, location };
      res = await request(jar, location);
      continue;
    }
    return { response: res, body: await res.text() };
  }
  throw new Error('too many redirects');
}

/** Full headless login; returns { code, state, iss, nonce, verifier, jar }. */
async function login(username, password, { jar = new Jar(), wrongPasswordFirst = false } = {}) {
  const { verifier, challenge } = pkcePair();
  const state = b64url(randomBytes(16));
  const nonce = b64url(randomBytes(16));

  const authorize = new URL(discovery.authorization_endpoint);
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    scope: 'openid profile email groups',
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();

  // 1. GET /auth?...  -> 303 /interaction/<uid1>  (sets op_interaction, op_interaction_resume)
  let res = await request(jar, authorize);
  assert.equal(res.status, 303);
  const loginUrl = new URL(res.headers.get('location'), op.issuer);
  assert.match(loginUrl.pathname, /^\/interaction\/[A-Za-z0-9_-]+$/);
  await res.arrayBuffer();

  // 2. GET /interaction/<uid1> -> login form
  res = await request(jar, loginUrl);
  assert.equal(res.status, 200);
  let body = await res.text();
  assert.match(body, /id="login"/);
  assert.match(body, /id="password"/);
  assert.match(body, /id="submit"/);
  const loginAction = new URL(formAction(body), op.issuer);
  assert.equal(loginAction.pathname, `${loginUrl.pathname}/login`);

  if (wrongPasswordFirst) {
    // 3a. wrong password -> 200, error element, interaction NOT finished
    res = await postForm(jar, loginAction, { login: username, password: 'definitely-wrong' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('location'), null);
    body = await res.text();
    assert.match(body, /id="error"[^>]*>Invalid username or password</);
  }

  // 3. POST /interaction/<uid1>/login -> 303 /auth/<uid1> -> 303 /interaction/<uid2>
  res = await postForm(jar, loginAction, { login: username, password });
  assert.equal(res.status, 303);
  let step = await follow(jar, res, REDIRECT_URI);

  if (!step.location) {
    // 4. consent page -> POST /interaction/<uid2>/confirm -> 303 /auth/<uid2> -> 303 redirect_uri
    assert.equal(step.response.status, 200);
    assert.match(step.body, /id="submit"/);
    const consentAction = new URL(formAction(step.body), op.issuer);
    assert.match(consentAction.pathname, /^\/interaction\/[A-Za-z0-9_-]+\/confirm$/);
    assert.notEqual(consentAction.pathname, `${loginUrl.pathname}/confirm`, 'consent has its own uid');
    res = await postForm(jar, consentAction, {});
    assert.equal(res.status, 303);
    step = await follow(jar, res, REDIRECT_URI);
  }

  assert.ok(step.location, `expected redirect to ${REDIRECT_URI}, got page:\n${step.body}`);
  const cb = new URL(step.location);
  assert.equal(`${cb.origin}${cb.pathname}`, REDIRECT_URI);
  return {
    code: cb.searchParams.get('code'),
    state: cb.searchParams.get('state'),
    iss: cb.searchParams.get('iss'),
    error: cb.searchParams.get('error'),
    expectedState: state,
    nonce,
    verifier,
    jar,
  };
}

function tokenRequest(fields, auth = basicAuth(CLIENT_ID, CLIENT_SECRET)) {
  return fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: auth },
    body: new URLSearchParams(fields),
  });
}

test('discovery document', async () => {
  const res = await fetch(`${op.issuer}/.well-known/openid-configuration`);
  assert.equal(res.status, 200);
  discovery = await res.json();
  assert.match(op.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(discovery.issuer, op.issuer);
  assert.equal(discovery.authorization_endpoint, `${op.issuer}/auth`);
  assert.equal(discovery.token_endpoint, `${op.issuer}/token`);
  assert.equal(discovery.userinfo_endpoint, `${op.issuer}/me`);
  assert.equal(discovery.end_session_endpoint, `${op.issuer}/session/end`);
  assert.equal(discovery.jwks_uri, `${op.issuer}/jwks`);
  assert.ok(discovery.code_challenge_methods_supported.includes('S256'));
  assert.equal(discovery.authorization_response_iss_parameter_supported, true);
  for (const s of ['openid', 'profile', 'email', 'groups', 'offline_access']) {
    assert.ok(discovery.scopes_supported.includes(s), s);
  }

  const jwks = await (await fetch(discovery.jwks_uri)).json();
  assert.equal(jwks.keys.length, 1);
  assert.equal(jwks.keys[0].kty, 'RSA');
  assert.equal(jwks.keys[0].alg, 'RS256');
  assert.equal(jwks.keys[0].d, undefined, 'no private parts published');
});

test('authorization code + PKCE flow for alice', async () => {
  const flow = await login('alice', 'alice-pw', { wrongPasswordFirst: true });
  assert.equal(flow.error, null);
  assert.ok(flow.code);
  assert.equal(flow.state, flow.expectedState);
  assert.equal(flow.iss, op.issuer);
  assert.ok(flow.jar.names().includes('op_session'), `cookies: ${flow.jar.names()}`);

  // Token exchange with client_secret_basic + code_verifier.
  let res = await tokenRequest({
    grant_type: 'authorization_code',
    code: flow.code,
    redirect_uri: REDIRECT_URI,
    code_verifier: flow.verifier,
  });
  const tokens = await res.json();
  assert.equal(res.status, 200, JSON.stringify(tokens));
  assert.equal(tokens.token_type, 'Bearer');
  assert.ok(tokens.access_token);
  assert.ok(tokens.id_token);
  assert.equal(tokens.refresh_token, undefined, 'no offline_access requested');

  const idt = decodeJwtPayload(tokens.id_token);
  const header = JSON.parse(Buffer.from(tokens.id_token.split('.')[0], 'base64url').toString());
  assert.equal(header.alg, 'RS256');
  assert.equal(idt.iss, op.issuer);
  assert.equal(idt.aud, CLIENT_ID);
  assert.equal(idt.sub, 'alice');
  assert.equal(idt.nonce, flow.nonce);
  assert.equal(idt.email, 'alice@example.test');
  assert.equal(idt.email_verified, true);
  assert.equal(idt.name, 'Alice Example');
  assert.equal(idt.preferred_username, 'alice');
  assert.deepEqual(idt.groups, ['team-a']);

  // userinfo
  res = await fetch(discovery.userinfo_endpoint, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  const userinfo = await res.json();
  assert.equal(res.status, 200, JSON.stringify(userinfo));
  assert.equal(userinfo.sub, 'alice');
  assert.equal(userinfo.email, 'alice@example.test');
  assert.equal(userinfo.name, 'Alice Example');
  assert.deepEqual(userinfo.groups, ['team-a']);

  // Replaying the same code fails.
  res = await tokenRequest({
    grant_type: 'authorization_code',
    code: flow.code,
    redirect_uri: REDIRECT_URI,
    code_verifier: flow.verifier,
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_grant');

  // ---- RP-initiated logout over plain HTTP (same cookie jar) ----
  const endSession = new URL(discovery.end_session_endpoint);
  endSession.search = new URLSearchParams({
    id_token_hint: tokens.id_token,
    post_logout_redirect_uri: POST_LOGOUT_URI,
    state: 'bye',
  }).toString();
  res = await request(flow.jar, endSession);
  assert.equal(res.status, 200);
  const logoutPage = await res.text();
  assert.match(logoutPage, /id="submit"/);
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(logoutPage)?.[1];
  assert.ok(xsrf, logoutPage);
  assert.equal(new URL(formAction(logoutPage)).pathname, '/session/end/confirm');
  res = await postForm(flow.jar, `${op.issuer}/session/end/confirm`, { xsrf, logout: 'yes' });
  assert.equal(res.status, 303);
  const after = new URL(res.headers.get('location'));
  assert.equal(`${after.origin}${after.pathname}`, POST_LOGOUT_URI);
  assert.equal(after.searchParams.get('state'), 'bye');
  assert.ok(!flow.jar.names().includes('op_session'), 'session cookie cleared');
});

test('bad PKCE verifier is rejected', async () => {
  const flow = await login('bob', 'bob-pw');
  assert.equal(flow.iss, op.issuer);
  const res = await tokenRequest({
    grant_type: 'authorization_code',
    code: flow.code,
    redirect_uri: REDIRECT_URI,
    code_verifier: pkcePair().verifier,
  });
  assert.equal(res.status, 400);
  assert.equal((await res.json()).error, 'invalid_grant');
});

test('client_secret_post works and carol gets her groups', async () => {
  const flow = await login('carol', 'carol-pw');
  const res = await fetch(discovery.token_endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: flow.code,
      redirect_uri: REDIRECT_URI,
      code_verifier: flow.verifier,
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
    }),
  });
  const tokens = await res.json();
  assert.equal(res.status, 200, JSON.stringify(tokens));
  assert.deepEqual(decodeJwtPayload(tokens.id_token).groups, ['team-b']);
});

test('PKCE is required and foreign redirect URIs are refused', async () => {
  const jar = new Jar();
  const base = {
    response_type: 'code', client_id: CLIENT_ID, scope: 'openid', state: 's',
  };

  // Without code_challenge: error redirected back to the (valid) redirect_uri.
  let url = new URL(discovery.authorization_endpoint);
  url.search = new URLSearchParams({ ...base, redirect_uri: REDIRECT_URI }).toString();
  let res = await request(jar, url);
  assert.equal(res.status, 303);
  const loc = new URL(res.headers.get('location'));
  assert.equal(`${loc.origin}${loc.pathname}`, REDIRECT_URI);
  assert.equal(loc.searchParams.get('error'), 'invalid_request');
  assert.equal(loc.searchParams.get('iss'), op.issuer);

  // Non-loopback host / wrong path: rendered error page, no redirect.
  const { challenge } = pkcePair();
  for (const bad of ['http://evil.example/auth/callback', 'http://127.0.0.1:45678/other', 'http://localhost:45678/auth/callback']) {
    url = new URL(discovery.authorization_endpoint);
    url.search = new URLSearchParams({
      ...base, redirect_uri: bad, code_challenge: challenge, code_challenge_method: 'S256',
    }).toString();
    res = await request(jar, url);
    assert.equal(res.status, 400, bad);
    assert.match(await res.text(), /redirect_uri/);
  }
});

test('consent can be denied', async () => {
  const jar = new Jar();
  const { challenge } = pkcePair();
  const url = new URL(discovery.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: REDIRECT_URI,
    scope: 'openid email',
    state: 'deny-me',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  let step = await follow(jar, await request(jar, url), REDIRECT_URI);
  const loginAction = new URL(formAction(step.body), op.issuer);
  step = await follow(jar, await postForm(jar, loginAction, { login: 'alice', password: 'alice-pw' }), REDIRECT_URI);
  const abort = /action="([^"]+\/abort)"/.exec(step.body)?.[1];
  assert.ok(abort, step.body);
  assert.match(step.body, /id="deny"/);
  step = await follow(jar, await postForm(jar, new URL(abort, op.issuer), {}), REDIRECT_URI);
  const cb = new URL(step.location);
  assert.equal(cb.searchParams.get('error'), 'access_denied');
  assert.equal(cb.searchParams.get('state'), 'deny-me');
  assert.equal(cb.searchParams.get('iss'), op.issuer);
});
