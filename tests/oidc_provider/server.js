// A real OpenID Connect provider (oidc-provider, OpenID Certified) standing in for Keycloak in
// the portal's tests. It is mounted under /realms/<realm> with Keycloak's endpoint paths and
// issues Keycloak-shaped tokens, so the portal's settings differ from a real Keycloak's only in
// host and port. Test-only: never deploy it.
//
//   PORTAL_URLS=http://127.0.0.1:8123 node server.js
//
// It listens on 127.0.0.1, port 0, and prints one line on stdout once it serves:
//   OIDC_PROVIDER_READY {"issuer": "...", "admin": "...", "port": ...}
//
// Besides the realm it serves /admin/* for tests: reset the users, change a user's groups or
// roles, disable a user, tamper with the next ID token of a user, re-sign a token with changed
// claims, read request counters, delete a user, make the Admin REST API fail.
//
// Under /admin/realms/<realm>/ it also answers the Keycloak Admin REST API calls a directory
// sync may make (group-by-path, group members, realm- and client-role users, clients,
// users/{id}, users/{id}/role-mappings), with Keycloak's JSON shapes, to a bearer token of the
// `portal-directory` service-account client (client-credentials grant), enforcing Keycloak's
// per-endpoint permissions: the service account holds the realm-management roles the shipped
// realm export grants it (deploy/keycloak/realm-export.json), and a call that needs another
// role (view-realm for a realm role's users, view-clients for a client's) is a 403 as in
// Keycloak. Tests may change those roles and slow every Admin REST answer down.

import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import {
  decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT,
} from 'jose';
import Provider, { interactionPolicy } from 'oidc-provider';

const here = dirname(fileURLToPath(import.meta.url));
const fixture = JSON.parse(readFileSync(process.env.USERS_FILE || join(here, 'users.json'), 'utf8'));
const realm = fixture.realm;
const prefix = `/realms/${realm}`;
const oidcPath = '/protocol/openid-connect';
const portalUrls = (process.env.PORTAL_URLS || 'http://127.0.0.1:8000')
  .split(',')
  .map((url) => url.trim().replace(/\/+$/, ''))
  .filter(Boolean);
// Keycloak's audience mapper puts the portal's client id into access tokens meant for it.
const portalClientId = process.env.PORTAL_CLIENT_ID || 'portal';
const portalResource = 'urn:ai-factory:portal';
const otherResource = 'urn:ai-factory:other-service';

// Keys added by /admin/rotate-key (published in the JWKS, newest first) and the key of
// /admin/resign's `foreign_key` (never published: a token signed by someone else).
let rotatedKeys = [];
const foreignKey = (await generateKeyPair('RS256', { extractable: true })).privateKey;

let users = new Map();
const tampers = new Map(); // sub -> {claims, corrupt_signature} for the next ID token
// realm: every request to the realm's endpoints, whatever the path.
const counters = { realm: 0, discovery: 0, token: 0, userinfo: 0, jwks: 0, directory: 0, introspection: 0 };
const revokedJtis = new Set(); // JWT access tokens revoked at /revoke, as Keycloak keeps them
// After `after` more Admin REST calls, the next `remaining` answer `status` (an outage).
let directoryFault = { status: 0, remaining: 0, after: 0 };
// The realm-management roles of the directory client's service account, from the realm export.
const realmExport = JSON.parse(readFileSync(
  process.env.REALM_EXPORT_FILE || join(here, '..', '..', 'deploy', 'keycloak', 'realm-export.json'), 'utf8',
));
const exportedDirectoryRoles = () => {
  const account = realmExport.users.find((u) => u.serviceAccountClientId === 'portal-directory');
  return [...((account && account.clientRoles && account.clientRoles['realm-management']) || [])];
};
let directoryRoles = exportedDirectoryRoles();
let directoryDelayMs = 0; // every Admin REST answer waits this long (a slow Keycloak)

function resetUsers() {
  users = new Map(fixture.users.map((u) => [u.username, { enabled: true, ...structuredClone(u) }]));
  tampers.clear();
  directoryFault = { status: 0, remaining: 0, after: 0 };
  directoryRoles = exportedDirectoryRoles();
  directoryDelayMs = 0;
  revokedJtis.clear();
  rotatedKeys = [];
  for (const key of Object.keys(counters)) counters[key] = 0;
}
resetUsers();

function userBySub(sub) {
  for (const user of users.values()) if (user.sub === sub) return user;
  return undefined;
}

// The claims Keycloak's mappers add to the ID token, userinfo and access token.
function keycloakClaims(user) {
  const resourceAccess = {};
  for (const [client, roles] of Object.entries(user.client_roles || {})) {
    resourceAccess[client] = { roles: [...roles] };
  }
  return {
    sub: user.sub,
    preferred_username: user.username,
    name: `${user.given_name} ${user.family_name}`,
    given_name: user.given_name,
    family_name: user.family_name,
    email: user.email,
    email_verified: user.email_verified ?? true,
    groups: [...user.groups],
    realm_access: { roles: [...user.realm_roles] },
    resource_access: resourceAccess,
  };
}

const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
const signingJwk = { ...(await exportJWK(privateKey)), kid: 'test-rs256-1', alg: 'RS256', use: 'sig' };

async function resign(token, {
  claims = {}, corruptSignature = false, headerTyp, kid, rotated = false, foreign = false,
} = {}) {
  const header = decodeProtectedHeader(token);
  const payload = { ...decodeJwt(token), ...claims };
  for (const [key, value] of Object.entries(claims)) if (value === null) delete payload[key];
  const newest = rotated && rotatedKeys[0];
  const key = foreign ? foreignKey : (newest ? newest.privateKey : privateKey);
  let signed = await new SignJWT(payload)
    .setProtectedHeader({
      alg: 'RS256', kid: kid || (newest ? newest.jwk.kid : signingJwk.kid), typ: headerTyp || header.typ || 'JWT',
    })
    .sign(key);
  if (corruptSignature) {
    const [h, p, s] = signed.split('.');
    const flipped = (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
    signed = [h, p, flipped].join('.');
  }
  return signed;
}

const escapeHtml = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body) {
  return `<!DOCTYPE html><html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body><div id="kc-content"><h1 id="kc-page-title">${escapeHtml(title)}</h1>${body}</div></body></html>`;
}

function loginPage(uid, { username = '', error = '' } = {}) {
  const errorHtml = error ? `<span id="input-error" class="kc-feedback-text">${escapeHtml(error)}</span>` : '';
  return page(`Sign in to ${realm}`, `
<form id="kc-form-login" method="post" action="${prefix}/login-actions/authenticate/${uid}">
  <label for="username">Username or email</label>
  <input id="username" name="username" type="text" autofocus value="${escapeHtml(username)}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password">
  ${errorHtml}
  <input id="kc-login" name="login" type="submit" value="Sign In">
</form>`);
}

async function readForm(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : {};
}

async function grantEverything(ctx, grant) {
  const { params } = ctx.oidc;
  grant.addOIDCScope(String(params.scope || 'openid'));
  const resources = params.resource ? [].concat(params.resource) : [];
  for (const resource of resources) grant.addResourceScope(resource, 'portal');
  if (ctx.oidc.client.clientId === 'portal-cli' && resources.length === 0) {
    grant.addResourceScope(portalResource, 'portal');
  }
  await grant.save();
  return grant;
}

// Keycloak ends the sessions of a disabled user: a session whose account is gone needs a new
// login (and prompt=none then answers login_required).
const policy = interactionPolicy.base();
policy.get('login').checks.add(
  new interactionPolicy.Check('account_disabled', 'the account is disabled', 'login_required', (ctx) => (
    ctx.oidc.session.accountId && !ctx.oidc.account
      ? interactionPolicy.Check.REQUEST_PROMPT
      : interactionPolicy.Check.NO_NEED_TO_PROMPT
  )),
  0,
);

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const origin = `http://127.0.0.1:${port}`;
const issuer = `${origin}${prefix}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: portalClientId,
      client_secret: fixture.clients.portal.secret,
      redirect_uris: portalUrls.map((url) => `${url}/oidc/callback/`),
      post_logout_redirect_uris: portalUrls.map((url) => `${url}/accounts/login/`),
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    },
    {
      // A public client for scripts and portalctl: a loopback redirect, or the device flow.
      client_id: 'portal-cli',
      client_name: 'AI Factory Portal CLI',
      application_type: 'native',
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    },
    {
      // The directory sync's confidential client: service account, client-credentials only.
      client_id: fixture.clients['portal-directory'].client_id,
      client_secret: fixture.clients['portal-directory'].secret,
      redirect_uris: [],
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
    {
      // A CI system's confidential client: its client-credentials tokens act as a portal
      // service account (ServiceAccount.keycloak_client_id).
      client_id: fixture.clients['portal-ci'].client_id,
      client_secret: fixture.clients['portal-ci'].secret,
      redirect_uris: [],
      grant_types: ['client_credentials'],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_post',
    },
  ],
  jwks: { keys: [signingJwk] },
  cookies: { keys: ['portal-test-provider-cookie-key'] },
  routes: {
    authorization: `${oidcPath}/auth`,
    token: `${oidcPath}/token`,
    userinfo: `${oidcPath}/userinfo`,
    jwks: `${oidcPath}/certs`,
    end_session: `${oidcPath}/logout`,
    // Keycloak's device authorization grant (RFC 8628): the client starts at /auth/device, the
    // person enters or confirms the user code at <realm>/device.
    device_authorization: `${oidcPath}/auth/device`,
    code_verification: '/device',
    introspection: `${oidcPath}/token/introspect`,
    revocation: `${oidcPath}/revoke`,
  },
  scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'portal'],
  claims: {
    // Keycloak's mappers add these whatever the scope; so does this provider.
    openid: [
      'sub', 'preferred_username', 'name', 'given_name', 'family_name', 'email', 'email_verified',
      'groups', 'realm_access', 'resource_access',
    ],
  },
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    deviceFlow: {
      enabled: true,
      // Keycloak's pages, with its element ids: enter the code, confirm it, done.
      async userCodeInputSource(ctx, form, out, err) {
        const error = err ? `<span id="input-error" class="kc-feedback-text">${escapeHtml(err.message || 'Invalid code')}</span>` : '';
        ctx.body = page('Device Login', `${form}${error}
<button id="kc-login" type="submit" form="op.deviceInputForm">Submit</button>`);
      },
      async userCodeConfirmSource(ctx, form, client, deviceInfo, userCode) {
        ctx.body = page('Device Login', `<p>Do you grant access to ${escapeHtml(client.clientName || client.clientId)}?</p>
<p id="kc-device-user-code">${escapeHtml(userCode)}</p>${form}
<button id="kc-login" type="submit" form="op.deviceConfirmForm">Yes</button>`);
      },
      async successSource(ctx) {
        ctx.body = page('Device Login Successful', '<p id="kc-device-success">Device Login Successful. You may close this page.</p>');
      },
    },
    rpInitiatedLogout: {
      enabled: true,
      // Keycloak signs out without asking when the RP sends id_token_hint: submit the form.
      async logoutSource(ctx, form) {
        const autoForm = form.replace('</form>', '<input type="hidden" name="logout" value="yes"/></form>');
        ctx.body = page('Signing out', `${autoForm}
<noscript><button type="submit" form="op.logoutForm" id="kc-logout">Sign out</button></noscript>
<script>document.getElementById('op.logoutForm').submit();</script>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('You are signed out', '<p id="kc-logout-done">You are signed out.</p>');
      },
    },
    resourceIndicators: {
      enabled: true,
      async defaultResource(ctx, client, oneOf) {
        if (oneOf) return oneOf;
        return client.clientId === 'portal-cli' ? portalResource : undefined;
      },
      async useGrantedResource() {
        return true;
      },
      async getResourceServerInfo(ctx, resource) {
        const audience = { [portalResource]: portalClientId, [otherResource]: 'other-service' }[resource];
        if (!audience) throw new Provider.errors.InvalidTarget();
        return {
          scope: 'portal',
          audience,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  async extraTokenClaims(ctx, token) {
    if (token.kind === 'ClientCredentials') {
      // Keycloak's service-account token: its user is service-account-<client id>.
      return { typ: 'Bearer', azp: token.clientId, preferred_username: `service-account-${token.clientId}` };
    }
    if (token.kind !== 'AccessToken') return undefined;
    const user = userBySub(token.accountId);
    if (!user) return undefined;
    const { sub, ...claims } = keycloakClaims(user);
    return { typ: 'Bearer', azp: token.clientId, ...claims };
  },
  async issueRefreshToken(ctx, client) {
    return client.grantTypeAllowed('refresh_token');
  },
  async findAccount(ctx, sub) {
    const user = userBySub(sub);
    if (!user || !user.enabled) return undefined;
    return {
      accountId: sub,
      async claims() {
        return keycloakClaims(user);
      },
    };
  },
  async loadExistingGrant(ctx) {
    // First-party clients: no consent screen, as with Keycloak's "Consent required: off".
    const { Grant } = ctx.oidc.provider;
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    const existing = grantId ? await Grant.find(grantId) : undefined;
    const grant = existing || new Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    return grantEverything(ctx, grant);
  },
  interactions: {
    policy,
    url: (ctx, interaction) => `${prefix}/login-actions/authenticate/${interaction.uid}`,
  },
  ttl: {
    AccessToken: 300,
    AuthorizationCode: 60,
    IdToken: 300,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
    RefreshToken: 1800,
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('We are sorry...', `<p id="kc-error-message">${escapeHtml(out.error)}: ${escapeHtml(out.error_description)}</p>`);
  },
});

provider.on('server_error', (ctx, err) => console.error('server_error', err));

// Count requests, and tamper with the next ID token of a user when a test asked for it.
provider.use(async (ctx, next) => {
  if (ctx.path === '/.well-known/openid-configuration') counters.discovery += 1;
  if (ctx.path === `${oidcPath}/token`) counters.token += 1;
  if (ctx.path === `${oidcPath}/userinfo`) counters.userinfo += 1;
  if (ctx.path === `${oidcPath}/certs`) {
    counters.jwks += 1;
    if (rotatedKeys.length) {
      // After a rotation the realm publishes the new keys beside the old one, as Keycloak does.
      const { d, p, q, dp, dq, qi, ...published } = signingJwk;
      ctx.type = 'json';
      ctx.body = { keys: [...rotatedKeys.map((k) => k.jwk), published] };
      return;
    }
  }
  if (ctx.path === `${oidcPath}/token/introspect`) counters.introspection += 1;
  await next();
  if (ctx.path === `${oidcPath}/auth/device` && ctx.status === 200 && ctx.body?.device_code) {
    // Keycloak says how often to poll (its realm's device polling interval, 5 s by default);
    // the tests poll every DEVICE_POLL_INTERVAL seconds.
    ctx.body = { ...ctx.body, interval: Number(process.env.DEVICE_POLL_INTERVAL || 5) };
  }
  if (ctx.path === `${oidcPath}/token` && ctx.status === 200 && ctx.body?.id_token) {
    const { sub } = decodeJwt(ctx.body.id_token);
    const tamper = tampers.get(sub);
    if (tamper) {
      tampers.delete(sub);
      ctx.body = {
        ...ctx.body,
        id_token: await resign(ctx.body.id_token, {
          claims: tamper.claims || {},
          corruptSignature: Boolean(tamper.corrupt_signature),
        }),
      };
    }
  }
});

// Keycloak introspects and revokes its JWT access tokens; oidc-provider refuses to for
// structured tokens, so JWTs are answered here and anything else goes on to oidc-provider.
provider.use(async (ctx, next) => {
  const paths = [`${oidcPath}/token/introspect`, `${oidcPath}/revoke`];
  if (ctx.method !== 'POST' || !paths.includes(ctx.path)) return next();
  const form = await readForm(ctx.req);
  const token = form.get('token') || '';
  if (token.split('.').length !== 3) {
    ctx.req.body = Object.fromEntries(form);
    return next();
  }
  let payload;
  try {
    ({ payload } = await jwtVerify(token, publicKey, { issuer }));
  } catch {
    payload = undefined;
  }
  ctx.type = 'json';
  if (ctx.path === `${oidcPath}/revoke`) {
    // RFC 7009: the client revokes its own token; an unknown token is not an error.
    if (payload && payload.jti && payload.azp === form.get('client_id')) revokedJtis.add(payload.jti);
    ctx.body = {};
    return undefined;
  }
  // Keycloak lets confidential clients of the realm introspect.
  const secretOk = form.get('client_id') === portalClientId
    && form.get('client_secret') === fixture.clients.portal.secret;
  if (!secretOk) {
    ctx.status = 401;
    ctx.body = { error: 'invalid_client' };
    return undefined;
  }
  const user = payload && userBySub(payload.sub);
  const active = Boolean(payload && !revokedJtis.has(payload.jti) && user && user.enabled);
  ctx.body = active ? { ...payload, active, client_id: payload.azp, username: user.username } : { active };
  return undefined;
});

// The login page, with Keycloak's element ids.
provider.use(async (ctx, next) => {
  const match = ctx.path.match(/^\/login-actions\/authenticate\/([^/]+)$/);
  if (!match) return next();
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== match[1]) ctx.throw(400, 'interaction mismatch');
  const { prompt, params } = details;
  if (prompt.name === 'consent') {
    // First-party clients: consent is implied (Keycloak's "Consent required: off").
    const { Grant } = provider;
    const grant = details.grantId
      ? await Grant.find(details.grantId)
      : new Grant({ accountId: details.session.accountId, clientId: params.client_id });
    grant.addOIDCScope(String(params.scope || 'openid'));
    for (const [resource] of Object.entries(details.prompt.details.missingResourceScopes || {})) {
      grant.addResourceScope(resource, 'portal');
    }
    const grantId = await grant.save();
    const returnTo = await provider.interactionResult(
      ctx.req, ctx.res, { consent: { grantId } }, { mergeWithLastSubmission: true },
    );
    return ctx.redirect(returnTo);
  }
  if (prompt.name !== 'login') ctx.throw(400, `unsupported prompt ${prompt.name}`);
  ctx.type = 'html';
  if (ctx.method === 'GET') {
    ctx.body = loginPage(details.uid, { username: params.login_hint || '' });
    return undefined;
  }
  if (ctx.method !== 'POST') ctx.throw(405);
  const form = await readForm(ctx.req);
  const username = (form.get('username') || '').trim();
  const user = users.get(username) || [...users.values()].find((u) => u.email === username);
  if (!user || user.password !== form.get('password')) {
    ctx.body = loginPage(details.uid, { username, error: 'Invalid username or password.' });
    return undefined;
  }
  if (!user.enabled) {
    ctx.body = loginPage(details.uid, { username, error: 'Account is disabled, contact your administrator.' });
    return undefined;
  }
  const returnTo = await provider.interactionResult(
    ctx.req, ctx.res,
    { login: { accountId: user.sub } },
    { mergeWithLastSubmission: false },
  );
  return ctx.redirect(returnTo);
});

const adminRoutes = {
  'POST /admin/reset': async () => {
    resetUsers();
    return { ok: true };
  },
  'GET /admin/stats': async () => ({ ...counters }),
  'POST /admin/users/:username': async (body, username) => {
    const user = users.get(username);
    if (!user) return [404, { error: 'no such user' }];
    for (const key of ['groups', 'realm_roles', 'client_roles', 'enabled', 'email', 'email_verified']) {
      if (key in body) user[key] = body[key];
    }
    return { sub: user.sub, username, groups: user.groups, enabled: user.enabled };
  },
  'PUT /admin/users/:username': async (body, username) => {
    // Add a user (for tests that need more users than the fixture has, e.g. paging).
    users.set(username, {
      enabled: true, groups: [], realm_roles: [], client_roles: {}, password: '', ...body, username,
    });
    return { ok: true };
  },
  'DELETE /admin/users/:username': async (body, username) => {
    if (!users.delete(username)) return [404, { error: 'no such user' }];
    return { ok: true };
  },
  'POST /admin/directory-fault': async (body) => {
    directoryFault = {
      status: Number(body.status || 503),
      remaining: Number(body.remaining ?? 1000),
      after: Number(body.after || 0),
    };
    return { ...directoryFault };
  },
  'POST /admin/directory-access': async (body) => {
    // The service account's realm-management roles and a delay per Admin REST answer.
    if (Array.isArray(body.roles)) directoryRoles = [...body.roles];
    if ('delay_ms' in body) directoryDelayMs = Number(body.delay_ms) || 0;
    return { roles: directoryRoles, delay_ms: directoryDelayMs };
  },
  'POST /admin/revoke-access-token': async (body) => {
    revokedJtis.add(decodeJwt(body.token).jti);
    return { ok: true };
  },
  'POST /admin/users/:username/next-id-token': async (body, username) => {
    const user = users.get(username);
    if (!user) return [404, { error: 'no such user' }];
    tampers.set(user.sub, body);
    return { ok: true };
  },
  'POST /admin/resign': async (body) => ({
    token: await resign(body.token, {
      claims: body.claims || {},
      corruptSignature: Boolean(body.corrupt_signature),
      headerTyp: body.header_typ,
      kid: body.kid,
      rotated: Boolean(body.rotated),
      foreign: Boolean(body.foreign_key),
    }),
  }),
  'POST /admin/rotate-key': async () => {
    // A new realm key, published first in the JWKS; /admin/resign's `rotated` signs with it.
    const pair = await generateKeyPair('RS256', { extractable: true });
    const kid = `test-rs256-rotated-${rotatedKeys.length + 1}`;
    rotatedKeys.unshift({ privateKey: pair.privateKey, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'RS256', use: 'sig' } });
    return { kid };
  },
};

// --- Keycloak's Admin REST API (the part the directory sync reads) ----------------------

const directoryClientId = fixture.clients['portal-directory'].client_id;
const directoryPrefix = `/admin/realms/${realm}`;
const uuidOf = (text) => {
  const h = createHash('sha1').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};
const clientUuids = Object.fromEntries(
  [portalClientId, 'portal-cli', directoryClientId, 'account'].map((id) => [uuidOf(`client:${id}`), id]),
);

function userRepresentation(user) {
  return {
    id: user.sub,
    username: user.username,
    firstName: user.given_name,
    lastName: user.family_name,
    email: user.email,
    emailVerified: user.email_verified ?? true,
    enabled: user.enabled,
    createdTimestamp: 1700000000000,
  };
}

// Groups exist when the fixture or any user names them; Keycloak lists only direct members.
function allGroupPaths() {
  const paths = new Set(fixture.groups || []);
  for (const user of users.values()) for (const path of user.groups) paths.add(path);
  return paths;
}

function groupRepresentation(path) {
  return { id: uuidOf(`group:${path}`), name: path.split('/').pop(), path, subGroups: [] };
}

function pageOf(list, query) {
  const first = Math.max(0, Number(query.get('first') || 0));
  const max = query.has('max') ? Math.max(0, Number(query.get('max'))) : 100;
  return list.slice(first, first + max);
}

// Keycloak's realm-management roles, any one of which lets a service account make the call.
const VIEW_USERS = ['view-users', 'manage-users'];
const VIEW_REALM = ['view-realm', 'manage-realm'];
const VIEW_CLIENTS = ['view-clients', 'manage-clients'];
const LIST_CLIENTS = ['query-clients', ...VIEW_CLIENTS];

function roleMappings(user) {
  const mapping = (name) => ({ id: uuidOf(`role:${name}`), name, composite: false });
  const body = {};
  if ((user.realm_roles || []).length) body.realmMappings = user.realm_roles.map(mapping);
  const clients = Object.entries(user.client_roles || {}).filter(([, roles]) => roles.length);
  if (clients.length) {
    body.clientMappings = Object.fromEntries(clients.map(([clientId, roles]) => [clientId, {
      id: uuidOf(`client:${clientId}`), client: clientId, mappings: roles.map(mapping),
    }]));
  }
  return body;
}

const directoryRoutes = [
  [/^\/group-by-path\/(.+)$/, VIEW_USERS, (m) => {
    const path = `/${decodeURIComponent(m[1]).replace(/^\/+/, '')}`;
    return allGroupPaths().has(path) ? groupRepresentation(path) : [404, { error: 'Group path does not exist' }];
  }],
  [/^\/groups\/([^/]+)\/members$/, VIEW_USERS, (m, query) => {
    const path = [...allGroupPaths()].find((p) => uuidOf(`group:${p}`) === m[1]);
    if (!path) return [404, { error: 'Could not find group by id' }];
    const members = [...users.values()].filter((u) => u.groups.includes(path));
    return pageOf(members.map(userRepresentation), query);
  }],
  [/^\/roles\/([^/]+)\/users$/, VIEW_REALM, (m, query) => {
    const role = decodeURIComponent(m[1]);
    const holders = [...users.values()].filter((u) => (u.realm_roles || []).includes(role));
    return pageOf(holders.map(userRepresentation), query);
  }],
  [/^\/clients$/, LIST_CLIENTS, (m, query) => {
    const wanted = query.get('clientId');
    return Object.entries(clientUuids)
      .filter(([, clientId]) => !wanted || clientId === wanted)
      .map(([id, clientId]) => ({ id, clientId }));
  }],
  [/^\/clients\/([^/]+)\/roles\/([^/]+)\/users$/, VIEW_CLIENTS, (m, query) => {
    const clientId = clientUuids[m[1]];
    if (!clientId) return [404, { error: 'Could not find client' }];
    const role = decodeURIComponent(m[2]);
    const holders = [...users.values()].filter((u) => ((u.client_roles || {})[clientId] || []).includes(role));
    return pageOf(holders.map(userRepresentation), query);
  }],
  [/^\/users\/([^/]+)$/, VIEW_USERS, (m) => {
    const user = userBySub(decodeURIComponent(m[1]));
    return user ? userRepresentation(user) : [404, { error: 'User not found' }];
  }],
  [/^\/users\/([^/]+)\/role-mappings$/, VIEW_USERS, (m) => {
    const user = userBySub(decodeURIComponent(m[1]));
    return user ? roleMappings(user) : [404, { error: 'User not found' }];
  }],
];

async function handleDirectory(req, res) {
  const url = new URL(req.url, origin);
  const send = (status, body) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  counters.directory += 1;
  if (directoryDelayMs > 0) await new Promise((resolve) => { setTimeout(resolve, directoryDelayMs); });
  const bearer = (req.headers.authorization || '').replace(/^Bearer\s+/i, '');
  const token = bearer ? await provider.ClientCredentials.find(bearer) : undefined;
  if (!token || token.isExpired) return send(401, { error: 'HTTP 401 Unauthorized' });
  // Only the directory client's service account reads, with the roles it holds.
  if (token.clientId !== directoryClientId) return send(403, { error: 'HTTP 403 Forbidden' });
  if (directoryFault.after > 0) {
    directoryFault.after -= 1;
  } else if (directoryFault.remaining > 0) {
    directoryFault.remaining -= 1;
    return send(directoryFault.status, { error: 'unknown_error' });
  }
  if (req.method !== 'GET') return send(405, { error: 'HTTP 405 Method Not Allowed' });
  const path = url.pathname.slice(directoryPrefix.length);
  for (const [regex, needs, handler] of directoryRoutes) {
    const match = path.match(regex);
    if (match) {
      if (!needs.some((role) => directoryRoles.includes(role))) {
        return send(403, { error: 'HTTP 403 Forbidden' });
      }
      const result = handler(match, url.searchParams);
      const [status, body] = Array.isArray(result) && typeof result[0] === 'number' ? result : [200, result];
      return send(status, body);
    }
  }
  return send(404, { error: 'HTTP 404 Not Found' });
}

async function handleAdmin(req, res) {
  const url = new URL(req.url, origin);
  for (const [route, handler] of Object.entries(adminRoutes)) {
    const [method, pattern] = route.split(' ');
    const regex = new RegExp(`^${pattern.replace(/:username/, '([^/]+)')}$`);
    const match = url.pathname.match(regex);
    if (method === req.method && match) {
      const result = await handler(await readJson(req), ...match.slice(1).map(decodeURIComponent));
      const [status, body] = Array.isArray(result) ? result : [200, result];
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
      return;
    }
  }
  res.writeHead(404, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error: 'not found' }));
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.url === prefix || req.url.startsWith(`${prefix}/`)) {
    counters.realm += 1;
    // Keep the full path for oidc-provider's URL building, then strip the mount prefix.
    req.originalUrl = req.url;
    req.url = req.url.slice(prefix.length) || '/';
    callback(req, res);
    return;
  }
  if (req.url.startsWith(`/admin/realms/${realm}/`)) {
    handleDirectory(req, res).catch((err) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(err) }));
    });
    return;
  }
  if (req.url.startsWith('/admin/')) {
    handleAdmin(req, res).catch((err) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(err) }));
    });
    return;
  }
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end('not found');
});

console.log(`OIDC_PROVIDER_READY ${JSON.stringify({ issuer, admin: `${origin}/admin`, port })}`);
