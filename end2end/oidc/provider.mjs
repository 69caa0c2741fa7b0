// Test-only OpenID Provider for KQueen's end-to-end and integration tests.
//
// Built on `oidc-provider` (panva, OpenID Certified), with our own minimal
// login / consent pages instead of the library's devInteractions (which accept
// any password).  Everything lives in memory and is lost when the process exits.
//
// Usage:
//   node end2end/oidc/provider.mjs          # prints {"issuer":"http://127.0.0.1:PORT"}
//   import { startProvider } from './oidc/provider.mjs';
//   const { issuer, close } = await startProvider({ port: 0 });
//
// See README.md next to this file for the environment variables, the users and
// the exact request sequence of a headless (no browser) login.

import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

import Provider, { errors as oidcErrors } from 'oidc-provider';

export const DEFAULT_USERS = Object.freeze([
  { username: 'alice', password: 'alice-pw', email: 'alice@example.test', name: 'Alice Example', groups: ['team-a'] },
  { username: 'bob', password: 'bob-pw', email: 'bob@example.test', name: 'Bob Operator', groups: ['kaas-admins'] },
  { username: 'carol', password: 'carol-pw', email: 'carol@example.test', name: 'Carol Example', groups: ['team-b'] },
]);

const HOST = '127.0.0.1';

function splitList(value) {
  return String(value)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function parseUsers(json) {
  const users = JSON.parse(json);
  if (!Array.isArray(users)) throw new TypeError('OIDC_USERS must be a JSON array');
  for (const u of users) {
    if (!u || typeof u.username !== 'string' || typeof u.password !== 'string') {
      throw new TypeError('every OIDC_USERS entry needs string "username" and "password"');
    }
  }
  return users;
}

function html(strings, ...values) {
  // Tagged template: interpolated values are HTML-escaped.
  return strings.reduce((out, s, i) => out + s + (i < values.length ? escapeHtml(values[i]) : ''), '');
}

function escapeHtml(value) {
  if (value === undefined || value === null) return '';
  if (value && typeof value === 'object' && 'raw' in value) return value.raw;
  return String(value)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const raw = (s) => ({ raw: s });

function page(title, body) {
  return html`<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<title>${title}</title>
</head>
<body>
<h1>${title}</h1>
${raw(body)}
</body>
</html>
`;
}

function isLoopbackHttp(url) {
  return url.protocol === 'http:' && url.hostname === HOST && url.port !== ''
    && url.username === '' && url.password === '' && url.hash === '';
}

// Extra redirect_uri acceptance: http://127.0.0.1:<any port>/auth/callback (the
// portal under test listens on a random port).  Query strings are not allowed.
export function isLoopbackCallback(value) {
  const url = URL.parse(value);
  return !!url && isLoopbackHttp(url) && url.pathname === '/auth/callback' && url.search === '';
}

// Extra post_logout_redirect_uri acceptance: http://127.0.0.1:<any port>/<any path>.
export function isLoopbackPostLogout(value) {
  const url = URL.parse(value);
  return !!url && isLoopbackHttp(url);
}

function readBody(req, limit = 64 * 1024) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks = [];
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        reject(new Error('request body too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res, status, body, type = 'text/html; charset=utf-8') {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}

function loginPage(uid, { login = '', error } = {}) {
  return page('Sign in', html`
${error ? raw(html`<p id="error" role="alert">${error}</p>`) : ''}
<form method="post" action="/interaction/${uid}/login" autocomplete="off">
  <label for="login">Username</label>
  <input id="login" name="login" type="text" value="${login}" autofocus required>
  <label for="password">Password</label>
  <input id="password" name="password" type="password" required>
  <button id="submit" type="submit">Sign in</button>
</form>
`);
}

function consentPage(uid, clientId, details) {
  const scopes = details.missingOIDCScope ?? [];
  const claims = details.missingOIDCClaims ?? [];
  return page('Authorize', html`
<p>Client <strong id="client">${clientId}</strong> requests access.</p>
<p>Scopes: <span id="scopes">${scopes.join(' ')}</span></p>
${claims.length ? raw(html`<p>Claims: <span id="claims">${claims.join(' ')}</span></p>`) : ''}
<form method="post" action="/interaction/${uid}/confirm">
  <button id="submit" type="submit">Allow</button>
</form>
<form method="post" action="/interaction/${uid}/abort">
  <button id="deny" type="submit">Deny</button>
</form>
`);
}

/**
 * Starts the provider.  Every option falls back to the matching environment
 * variable, then to the documented default.
 *
 * @param {object} [options]
 * @param {number} [options.port]        OIDC_PORT, default 0 (random free port)
 * @param {string} [options.clientId]    OIDC_CLIENT_ID, default "kqueen"
 * @param {string} [options.clientSecret] OIDC_CLIENT_SECRET, default "kqueen-secret"
 * @param {string[]} [options.redirectUris] OIDC_REDIRECT_URIS (comma separated)
 * @param {string[]} [options.postLogoutRedirectUris] OIDC_POST_LOGOUT_REDIRECT_URIS (comma separated)
 * @param {Array<{username,password,email,name,groups}>} [options.users] OIDC_USERS (JSON)
 * @param {(msg: string) => void} [options.log] default: write to stderr
 * @returns {Promise<{ issuer: string, port: number, close(): Promise<void> }>}
 */
export async function startProvider(options = {}) {
  const env = process.env;
  const port = Number(options.port ?? env.OIDC_PORT ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`invalid port: ${port}`);
  const clientId = options.clientId ?? env.OIDC_CLIENT_ID ?? 'kqueen';
  const clientSecret = options.clientSecret ?? env.OIDC_CLIENT_SECRET ?? 'kqueen-secret';
  const redirectUris = options.redirectUris
    ?? splitList(env.OIDC_REDIRECT_URIS ?? 'http://127.0.0.1:3000/auth/callback');
  const postLogoutRedirectUris = options.postLogoutRedirectUris
    ?? splitList(env.OIDC_POST_LOGOUT_REDIRECT_URIS ?? 'http://127.0.0.1:3000/');
  const users = options.users ?? (env.OIDC_USERS ? parseUsers(env.OIDC_USERS) : DEFAULT_USERS);
  const log = options.log ?? ((msg) => process.stderr.write(`[oidc] ${msg}\n`));

  const usersByName = new Map(users.map((u) => [u.username, u]));

  // Listen first: with port 0 the issuer (which contains the port) is only
  // known after bind.
  const server = createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, HOST, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const actualPort = server.address().port;
  const issuer = `http://${HOST}:${actualPort}`;

  // One RS256 signing key per process start; stable for the process lifetime.
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingJwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };

  const configuration = {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      client_name: 'KQueen (test)',
      redirect_uris: redirectUris,
      post_logout_redirect_uris: postLogoutRedirectUris,
      response_types: ['code'],
      // refresh_token only matters when offline_access is requested+granted; the device
      // code grant (RFC 8628) is what `kqueen login` uses through the portal.
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'RS256',
    }],
    // client_secret_post is accepted as well (any of these may be registered/used).
    clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
    jwks: { keys: [signingJwk] },
    cookies: {
      // Cookies are not port-scoped: the portal on 127.0.0.1:<other port> sees
      // these too, so keep the names distinct from anything the portal uses.
      names: { session: 'op_session', interaction: 'op_interaction', resume: 'op_interaction_resume' },
      keys: [randomBytes(32).toString('base64url')],
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    scopes: ['openid', 'profile', 'email', 'groups', 'offline_access'],
    claims: {
      openid: ['sub'],
      profile: ['name', 'preferred_username'],
      email: ['email', 'email_verified'],
      groups: ['groups'],
    },
    // Put the scope-derived claims (email, name, groups, ...) into the ID token
    // as well, not only into the userinfo response.
    conformIdTokenClaims: false,
    pkce: { required: () => true }, // S256 is the only supported method
    responseTypes: ['code'],
    features: {
      devInteractions: { enabled: false }, // we render our own pages below
      userinfo: { enabled: true },
      // RFC 8628 device authorization grant. Our own pages, so that a plain HTTP client finds
      // stable ids: the form holds its buttons (POST /device  xsrf, user_code, confirm|abort).
      deviceFlow: {
        enabled: env.OIDC_DEVICE_FLOW !== '0',
        async userCodeInputSource(ctx, form, out, err) {
          const error = err ? `<p id="error" role="alert">${escapeHtml(err.userCode ? 'The code you entered is incorrect.' : (err.message ?? 'error'))}</p>` : '';
          ctx.type = 'html';
          ctx.body = page('Enter the code shown on your device', `${error}\n${form.replace('</form>', '<button id="submit" type="submit">Continue</button></form>')}`);
        },
        async userCodeConfirmSource(ctx, form, client, deviceInfo, userCode) {
          const buttons = '<button id="submit" type="submit">Continue</button>'
            + '<button id="abort" type="submit" name="abort" value="yes">Abort</button></form>';
          ctx.type = 'html';
          ctx.body = page('Confirm the device', html`<p>Client <strong id="client">${client.clientId}</strong> shows the code <code id="user-code">${userCode}</code>.</p>
${raw(form.replace('</form>', buttons))}`);
        },
        async successSource(ctx) {
          ctx.type = 'html';
          ctx.body = page('Signed in', '<p id="device-success">You are signed in on your device; you can close this page.</p>');
        },
      },
      resourceIndicators: { enabled: false }, // keep access tokens opaque + userinfo-usable
      rpInitiatedLogout: {
        enabled: true,
        // `form` is the provider's <form id="op.logoutForm" ...> containing the
        // hidden `xsrf` input.  Put the buttons *inside* it so a plain HTTP client
        // only needs: POST /session/end/confirm  xsrf=<value>&logout=yes
        async logoutSource(ctx, form) {
          const buttons = '<button id="submit" type="submit" name="logout" value="yes">Yes, sign me out</button>'
            + '<button id="cancel" type="submit">No, stay signed in</button></form>';
          ctx.type = 'html';
          ctx.body = page('Sign out', `<p>Do you want to sign out from ${escapeHtml(issuer)}?</p>\n${form.replace('</form>', buttons)}`);
        },
        async postLogoutSuccessSource(ctx) {
          ctx.type = 'html';
          ctx.body = page('Signed out', '<p id="signed-out">You have been signed out.</p>');
        },
      },
    },
    // RFC 9207: oidc-provider 9 always adds `iss` to (non-JWT) authorization
    // responses and advertises authorization_response_iss_parameter_supported;
    // there is no feature flag for it.
    async findAccount(ctx, sub) {
      const user = usersByName.get(sub);
      if (!user) return undefined;
      return {
        accountId: user.username,
        async claims() {
          return {
            sub: user.username,
            name: user.name,
            preferred_username: user.username,
            email: user.email,
            email_verified: user.email !== undefined,
            groups: user.groups ?? [],
          };
        },
      };
    },
    clientBasedCORS: () => false,
    async renderError(ctx, out) {
      ctx.type = 'html';
      const items = Object.entries(out).map(([k, v]) => html`<p><strong>${k}</strong>: <span id="${k}">${v}</span></p>`).join('\n');
      ctx.body = page('Error', items);
    },
    ttl: {
      AccessToken: 600,
      IdToken: 600,
      AuthorizationCode: 60,
      Interaction: 600,
      Session: 3600,
      Grant: 3600,
      RefreshToken: 3600,
      DeviceCode: Number(env.OIDC_DEVICE_CODE_TTL ?? 600),
    },
  };

  let provider;
  try {
    provider = new Provider(issuer, configuration);
  } catch (err) {
    server.close();
    throw err;
  }
  provider.proxy = false; // plain http on 127.0.0.1, no X-Forwarded-* trust

  // Accept http://127.0.0.1:<any port>/auth/callback (and any 127.0.0.1 post
  // logout URI) for our client, in addition to the registered ones.  These are
  // the documented overridable Client instance methods that the authorization
  // and end_session endpoints consult.
  const { redirectUriAllowed, postLogoutRedirectUriAllowed } = provider.Client.prototype;
  provider.Client.prototype.redirectUriAllowed = function loopbackRedirectUriAllowed(value) {
    return redirectUriAllowed.call(this, value) || (this.clientId === clientId && isLoopbackCallback(value));
  };
  provider.Client.prototype.postLogoutRedirectUriAllowed = function loopbackPostLogoutAllowed(value) {
    return postLogoutRedirectUriAllowed.call(this, value)
      || (this.clientId === clientId && isLoopbackPostLogout(value));
  };

  for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error',
    'end_session.error', 'end_session_confirm.error', 'discovery.error', 'jwks.error',
    'device_authorization.error', 'code_verification.error']) {
    provider.on(event, (ctx, err) => log(`${event}: ${err?.error ?? err?.name ?? ''} ${err?.error_description ?? err?.message ?? ''}`.trim()));
  }

  // ---- interactions (login + consent) ------------------------------------
  //
  // Consent: we render an explicit consent page (POST /interaction/:uid/confirm,
  // button id "submit"; or /abort with button id "deny" -> access_denied).
  // The grant is created server-side on confirm exactly like the library's
  // reference implementation: new Grant (or the existing one), add the missing
  // OIDC scopes/claims, save, finish with { consent: { grantId } }.

  async function handleInteraction(req, res, uid, action) {
    let details;
    try {
      details = await provider.interactionDetails(req, res);
    } catch (err) {
      if (err instanceof oidcErrors.SessionNotFound) {
        send(res, 400, page('Error', html`<p id="error">${err.error_description ?? err.message}</p>`));
        return;
      }
      throw err;
    }
    if (details.uid !== uid) {
      send(res, 400, page('Error', '<p id="error">interaction uid does not match the interaction cookie</p>'));
      return;
    }
    const { prompt, params, session } = details;

    if (req.method === 'GET' && !action) {
      if (prompt.name === 'login') {
        send(res, 200, loginPage(uid, { login: params.login_hint ?? '' }));
      } else if (prompt.name === 'consent') {
        send(res, 200, consentPage(uid, params.client_id, prompt.details));
      } else {
        send(res, 501, page('Error', html`<p id="error">unsupported prompt ${prompt.name}</p>`));
      }
      return;
    }

    if (req.method !== 'POST' || !action) {
      send(res, 405, page('Error', '<p id="error">method not allowed</p>'));
      return;
    }

    const body = new URLSearchParams(await readBody(req));

    if (action === 'abort') {
      await provider.interactionFinished(req, res, {
        error: 'access_denied',
        error_description: 'End-User aborted interaction',
      }, { mergeWithLastSubmission: false });
      return;
    }

    if (action === 'login') {
      if (prompt.name !== 'login') {
        send(res, 400, page('Error', '<p id="error">this interaction does not expect a login</p>'));
        return;
      }
      const login = body.get('login') ?? '';
      const user = usersByName.get(login);
      if (!user || user.password !== (body.get('password') ?? '')) {
        log(`login failed for ${JSON.stringify(login)}`);
        send(res, 200, loginPage(uid, { login, error: 'Invalid username or password' }));
        return;
      }
      await provider.interactionFinished(req, res, {
        login: { accountId: user.username, amr: ['pwd'] },
      }, { mergeWithLastSubmission: false });
      return;
    }

    if (action === 'confirm') {
      if (prompt.name !== 'consent') {
        send(res, 400, page('Error', '<p id="error">this interaction does not expect consent</p>'));
        return;
      }
      const { details: missing } = prompt;
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
      if (missing.missingResourceScopes) {
        for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
          grant.addResourceScope(indicator, scopes.join(' '));
        }
      }
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
      return;
    }

    send(res, 404, page('Error', '<p id="error">not found</p>'));
  }

  const oidcCallback = provider.callback();
  const INTERACTION = /^\/interaction\/([A-Za-z0-9_-]+)(?:\/(login|confirm|abort))?\/?$/;

  server.on('request', (req, res) => {
    const { pathname } = new URL(req.url, issuer);
    const m = INTERACTION.exec(pathname);
    if (!m) {
      oidcCallback(req, res);
      return;
    }
    handleInteraction(req, res, m[1], m[2]).catch((err) => {
      log(`interaction error: ${err?.stack ?? err}`);
      if (!res.headersSent) send(res, 500, page('Error', '<p id="error">internal error</p>'));
      else res.destroy();
    });
  });

  let closing;
  return {
    issuer,
    port: actualPort,
    provider,
    close() {
      closing ??= new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

function isMain() {
  if (!process.argv[1]) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (isMain()) {
  // stdout carries exactly one JSON line; the library prints notices with
  // console.info, so route everything else to stderr.
  console.log = console.error;
  console.info = console.error;
  try {
    const { issuer, close } = await startProvider();
    process.stdout.write(`${JSON.stringify({ issuer })}\n`);
    const shutdown = (signal) => {
      process.stderr.write(`[oidc] ${signal}, shutting down\n`);
      close().then(() => process.exit(0));
      setTimeout(() => process.exit(0), 2000).unref();
    };
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
  } catch (err) {
    process.stderr.write(`[oidc] failed to start: ${err?.stack ?? err}\n`);
    process.exit(1);
  }
}
