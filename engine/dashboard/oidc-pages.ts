// Sign-in with the school's identity provider, the dashboard's side of it (the protocol checks are
// engine/identity/provider.ts). Every refusal forgets the flow, so a tampered callback cannot be retried into a
// session; after the callback a page, not a 303, sends the browser on (docs/decisions/dashboard-sign-in.md).
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type Role, type WalletAccess, walletsFor } from '../identity/managers.ts';
import { type Identity, SignInRefused } from '../identity/provider.ts';
import type { DashboardDeps } from './deps.ts';
import { formOf } from './form.ts';
import { html } from './html.ts';
import { type MessageKey, type Params, uiFor } from './i18n.ts';
import { sendPage } from './layout.ts';
import { clearFlowCookie, newChoiceToken, readFlowCookie, setFlowCookie } from './oidc-flow-cookie.ts';
import { checkSameOrigin, setSessionCookie } from './session-http.ts';
import { OIDC_START_PATH, SIGNED_OUT_PATH } from './sign-in-pages.ts';

const OIDC_CALLBACK_PATH = '/dashboard/oidc/callback';
const CHOOSE_PATH = '/dashboard/oidc/choose';
// The dashboard's start, which sends each session to its first page: the wallet, or a teacher's classes.
const WALLET_PATH = '/dashboard';

const ROLE_TEXT: Record<Role, MessageKey> = { owner: 'oidc.role.owner', manager: 'oidc.role.manager', viewer: 'oidc.role.viewer' };

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
export function providerSignOut(
  deps: DashboardDeps,
): ((req: FastifyRequest, via: 'link' | 'provider') => Promise<string | null>) | undefined {
  const provider = deps.identity;
  if (!provider) return undefined;
  return async (req, via) =>
    via === 'provider' ? ((await provider.endSessionUrl(ownUrl(req, deps.publicUrl, SIGNED_OUT_PATH)))?.href ?? null) : null;
}

const sameToken = (a: string, b: string) =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

/** The refusal page, its text the catalog's `message` in the request's language. */
function refusal(reply: FastifyReply, req: FastifyRequest, status: number, message: MessageKey, params?: Params) {
  clearFlowCookie(reply, req);
  const { t } = uiFor(req);
  return sendPage(reply, status, {
    title: t('oidc.refused_title'),
    body: html`<p class="error" role="alert" data-testid="refusal">${t(message, params)}</p>
<p><a href="${OIDC_START_PATH}">${t('oidc.start_again')}</a></p>`,
  });
}

/** A provider's refusal: its reason in the page's language, openid-client's own words (or the address) kept as they are. */
const providerRefusal = (reply: FastifyReply, req: FastifyRequest, status: number, e: SignInRefused, issuer: URL) =>
  refusal(reply, req, status, `oidc.refused.${e.code}`, { detail: e.detail, issuer: issuer.href });

export function registerOidcPages(scope: FastifyInstance, deps: DashboardDeps): void {
  const provider = deps.identity;
  if (!provider) return; // no provider configured: these addresses are the dashboard's 401/404 like any other
  const secret = provider.settings.clientSecret;
  const now = () => deps.clock.now().getTime();

  /** Opens the session and sends the browser on (see the header comment for why a page and not a 303). */
  async function open(req: FastifyRequest, reply: FastifyReply, access: WalletAccess, identity: Identity, viaPage: boolean) {
    const opened = await deps.sessions.openFor(access, identity.key);
    if (!opened) return refusal(reply, req, 403, 'oidc.access_ended');
    req.log.info(
      { wallet: access.walletId, role: opened.session.role, identity: identity.key },
      'dashboard sign-in through the identity provider',
    );
    clearFlowCookie(reply, req);
    setSessionCookie(reply, req, opened.secret, deps.sessions.sessionSeconds);
    if (!viaPage) return reply.code(303).header('location', WALLET_PATH).send();
    reply.header('refresh', `0; url=${WALLET_PATH}`);
    const ui = uiFor(req);
    return sendPage(reply, 200, {
      title: ui.t('oidc.signed_in_title'),
      body: html`<p role="status">${ui.th('oidc.signed_in', { identity: identity.key, role: ui.t(ROLE_TEXT[opened.session.role]), wallet: access.walletId })}</p>
<p><a href="${WALLET_PATH}">${ui.t('oidc.continue')}</a></p>`,
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
      return providerRefusal(reply, req, 502, e, provider.settings.issuer);
    }
  });

  scope.get(OIDC_CALLBACK_PATH, async (req, reply) => {
    const flow = readFlowCookie(req, secret, now());
    if (flow?.step !== 'provider') {
      return refusal(reply, req, 400, 'oidc.not_started');
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
      return providerRefusal(reply, req, 401, e, provider.settings.issuer);
    }
    const access = await walletsFor(deps.db, identity.key, provider.settings.matchBy);
    if (access.length === 0) {
      return refusal(reply, req, 403, 'oidc.no_wallet', { provider: provider.settings.name, identity: identity.key });
    }
    if (access.length === 1) return open(req, reply, access[0]!, identity, true);
    const token = newChoiceToken();
    setFlowCookie(reply, req, secret, { step: 'choice', identity, walletIds: access.map((a) => a.walletId), token }, now());
    const ui = uiFor(req);
    return sendPage(reply, 200, {
      title: ui.t('oidc.choose_title'),
      body: html`<p>${ui.th('oidc.choose_intro', { identity: identity.key })}</p>
<ul class="choices">${access.map(
        (
          a,
        ) => html`<li><form method="post" action="${CHOOSE_PATH}"><input type="hidden" name="token" value="${token}"><input type="hidden" name="wallet" value="${a.walletId}">
<button type="submit">${ui.th('oidc.open_as', { wallet: a.walletId, role: ui.t(ROLE_TEXT[a.role]) })}</button></form></li>`,
      )}</ul>`,
    });
  });

  scope.post(CHOOSE_PATH, async (req, reply) => {
    checkSameOrigin(req);
    const form = formOf(req.body);
    const flow = readFlowCookie(req, secret, now());
    if (
      flow?.step !== 'choice' ||
      typeof form.token !== 'string' ||
      !sameToken(form.token, flow.token) ||
      !flow.walletIds.includes(form.wallet ?? '')
    ) {
      return refusal(reply, req, 400, 'oidc.stale_choice');
    }
    // Looked up again: a manager removed since the choice page was shown opens nothing.
    const access = (await walletsFor(deps.db, flow.identity.key, provider.settings.matchBy)).find((a) => a.walletId === form.wallet);
    if (!access) return refusal(reply, req, 403, 'oidc.access_ended');
    return open(req, reply, access, flow.identity, false);
  });
}
