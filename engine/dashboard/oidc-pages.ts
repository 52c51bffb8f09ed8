// Sign-in with the school's identity provider (GATEWAY_OIDC_*), the dashboard's side of it: leaving for the
// provider, coming back, and opening a session for the wallet the identity owns or manages. The protocol checks
// themselves are engine/identity/provider.ts; who may open which wallet is engine/identity/managers.ts.
//
//   GET  /dashboard/oidc/start     → 303 to the provider (the flow's secrets go in a sealed cookie)
//   GET  /dashboard/oidc/callback  → checks the answer; one wallet: session; several: a choice; none: refusal
//   POST /dashboard/oidc/choose    → the chosen wallet's session
// and, with GATEWAY_OIDC_SIGN_OUT=provider, where sign-out sends a provider session next (providerSignOut).
//
// Every refusal opens no session and forgets the flow, so a tampered callback cannot be retried into one.
//
// After the callback the browser is sent on by a page (Refresh), not by a 303: the callback is a navigation
// that came from the provider's site, and a browser does not send the SameSite=Strict session cookie on the
// redirects of a cross-site navigation, so a 303 would land on "not signed in". The page's own refresh is a
// navigation from this site, which the cookie goes with.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { walletsFor, type WalletAccess } from '../identity/managers.ts';
import { SignInRefused, type Identity } from '../identity/provider.ts';
import type { DashboardDeps } from './deps.ts';
import { formOf } from './form.ts';
import { html } from './html.ts';
import { sendPage } from './layout.ts';
import { clearFlowCookie, newChoiceToken, readFlowCookie, setFlowCookie } from './oidc-flow-cookie.ts';
import { checkSameOrigin, setSessionCookie } from './session-http.ts';
import { OIDC_START_PATH, SIGNED_OUT_PATH } from './sign-in-pages.ts';

export const OIDC_CALLBACK_PATH = '/dashboard/oidc/callback';
const CHOOSE_PATH = '/dashboard/oidc/choose';
const WALLET_PATH = '/dashboard/wallet';

const ROLE_TEXT: Record<string, string> = { owner: 'owner', manager: 'manager (keys and usage)', viewer: 'viewer (reads only)' };

/** This gateway's address for the provider: GATEWAY_PUBLIC_URL when set (behind a proxy), else this request's origin. */
function ownUrl(req: FastifyRequest, publicUrl: string | undefined, path: string): string {
  const origin = publicUrl || `${req.protocol}://${req.headers.host ?? '127.0.0.1'}`;
  return `${origin.replace(/\/+$/, '')}${path}`;
}

/** Where the provider sends the browser back. */
const redirectUri = (req: FastifyRequest, publicUrl: string | undefined) => ownUrl(req, publicUrl, OIDC_CALLBACK_PATH);

/**
 * For sign-out: the provider's end-session address (coming back to the signed-out page) when the session came
 * through the provider and the operator asked for it (GATEWAY_OIDC_SIGN_OUT=provider); null otherwise.
 */
export function providerSignOut(deps: DashboardDeps): ((req: FastifyRequest, via: 'link' | 'provider') => Promise<string | null>) | undefined {
  const provider = deps.identity;
  if (!provider) return undefined;
  return async (req, via) => (via === 'provider' ? ((await provider.endSessionUrl(ownUrl(req, deps.publicUrl, SIGNED_OUT_PATH)))?.href ?? null) : null);
}

const sameToken = (a: string, b: string) => timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

function refusal(reply: FastifyReply, req: FastifyRequest, status: number, message: string) {
  clearFlowCookie(reply, req);
  return sendPage(reply, status, {
    title: 'Not signed in',
    body: html`<p class="error" role="alert" data-testid="refusal">${message}</p>
<p><a href="${OIDC_START_PATH}">Start the sign-in again</a></p>`,
  });
}

export function registerOidcPages(scope: FastifyInstance, deps: DashboardDeps): void {
  const provider = deps.identity;
  if (!provider) return; // no provider configured: these addresses are the dashboard's 401/404 like any other
  const secret = provider.settings.clientSecret;
  const now = () => deps.clock.now().getTime();

  /** Opens the session and sends the browser on (see the header comment for why a page and not a 303). */
  async function open(req: FastifyRequest, reply: FastifyReply, access: WalletAccess, identity: Identity, viaPage: boolean) {
    const opened = await deps.sessions.openFor(access, identity.key);
    if (!opened) return refusal(reply, req, 403, 'Your access to this wallet ended while you were signing in. Ask its owner.');
    req.log.info({ wallet: access.walletId, role: opened.session.role, identity: identity.key }, 'dashboard sign-in through the identity provider');
    clearFlowCookie(reply, req);
    setSessionCookie(reply, req, opened.secret, deps.sessions.sessionSeconds);
    if (!viaPage) return reply.code(303).header('location', WALLET_PATH).send();
    reply.header('refresh', `0; url=${WALLET_PATH}`);
    return sendPage(reply, 200, {
      title: 'Signed in',
      body: html`<p role="status">Signed in as <strong>${identity.key}</strong>, ${ROLE_TEXT[opened.session.role]} of wallet <code>${access.walletId}</code>.</p>
<p><a href="${WALLET_PATH}">Continue to the wallet</a></p>`,
    });
  }

  scope.get(OIDC_START_PATH, async (req, reply) => {
    const back = redirectUri(req, deps.publicUrl);
    try {
      const { url, secrets } = await provider.begin(back);
      setFlowCookie(reply, req, secret, { step: 'provider', secrets, redirectUri: back }, now());
      return reply.code(303).header('location', url.href).send();
    } catch (e) {
      if (!(e instanceof SignInRefused)) throw e;
      req.log.warn({ err: e }, 'identity provider sign-in could not start');
      return refusal(reply, req, 502, e.message);
    }
  });

  scope.get(OIDC_CALLBACK_PATH, async (req, reply) => {
    const flow = readFlowCookie(req, secret, now());
    if (!flow || flow.step !== 'provider') {
      return refusal(reply, req, 400, 'This sign-in was not started in this browser, or it took longer than 10 minutes. Start it again.');
    }
    const query = req.raw.url?.split('?')[1] ?? '';
    const callbackUrl = new URL(flow.redirectUri);
    callbackUrl.search = query;
    let identity: Identity;
    try {
      identity = await provider.finish(callbackUrl, flow.secrets);
    } catch (e) {
      if (!(e instanceof SignInRefused)) throw e;
      req.log.warn({ err: e }, 'identity provider answer refused');
      return refusal(reply, req, 401, e.message);
    }
    const access = await walletsFor(deps.db, identity.key, provider.settings.matchBy);
    if (access.length === 0) {
      return refusal(
        reply,
        req,
        403,
        `${provider.settings.name} signed you in as ${identity.key}, but no wallet here is owned or managed by that identity. Ask the wallet's owner to add you as a manager, or your operator to make you its owner.`,
      );
    }
    if (access.length === 1) return open(req, reply, access[0], identity, true);
    const token = newChoiceToken();
    setFlowCookie(reply, req, secret, { step: 'choice', identity, walletIds: access.map((a) => a.walletId), token }, now());
    return sendPage(reply, 200, {
      title: 'Choose a wallet',
      body: html`<p>Signed in as <strong>${identity.key}</strong>. You may open these wallets; a session opens one.</p>
<ul class="choices">${access.map(
        (a) => html`<li><form method="post" action="${CHOOSE_PATH}"><input type="hidden" name="token" value="${token}"><input type="hidden" name="wallet" value="${a.walletId}">
<button type="submit">Open <code>${a.walletId}</code> as ${ROLE_TEXT[a.role]}</button></form></li>`,
      )}</ul>`,
    });
  });

  scope.post(CHOOSE_PATH, async (req, reply) => {
    checkSameOrigin(req);
    const form = formOf(req.body);
    const flow = readFlowCookie(req, secret, now());
    if (!flow || flow.step !== 'choice' || typeof form.token !== 'string' || !sameToken(form.token, flow.token) || !flow.walletIds.includes(form.wallet ?? '')) {
      return refusal(reply, req, 400, 'This choice is stale (more than 10 minutes old, or from another sign-in). Start the sign-in again.');
    }
    // Looked up again: a manager removed since the choice page was shown opens nothing.
    const access = (await walletsFor(deps.db, flow.identity.key, provider.settings.matchBy)).find((a) => a.walletId === form.wallet);
    if (!access) return refusal(reply, req, 403, 'Your access to this wallet ended while you were signing in. Ask its owner.');
    return open(req, reply, access, flow.identity, false);
  });
}
