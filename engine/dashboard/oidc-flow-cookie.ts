// The browser's half of a sign-in through the identity provider, between leaving for the provider and the
// choice of wallet: the flow's state, nonce and PKCE verifier, then the identity the provider vouched for and
// the wallets it may open. Sealed (flash.ts) under a key derived from GATEWAY_OIDC_CLIENT_SECRET, which every
// gateway process has, so the callback may reach any process and nothing needs a table; the seal also carries
// its own expiry, so an old cookie replayed later opens nothing.
//
// Sealed rather than signed with @fastify/cookie's signer, which only signs: the value would be readable, and it
// holds the PKCE verifier and nonce. @fastify/cookie writes and parses it (session-http.ts).
//
// SameSite=Lax, unlike the session cookie: the provider sends the browser back with a cross-site top-level GET,
// and a Strict cookie would not come with it. It holds no session, only the means to finish this one flow.
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FlowSecrets, Identity } from '../identity/provider.ts';
import { openValue, sealValue } from './flash.ts';
import { cookieOptions, needsSecureCookie } from './session-http.ts';

/** Long enough to type a password and answer a second factor; short, since it opens a sign-in. */
const FLOW_TTL_MS = 10 * 60_000;

/** After the redirect, before the callback. */
interface AwaitingProvider {
  step: 'provider';
  secrets: FlowSecrets;
  redirectUri: string;
}

/** After the callback, when the identity may open several wallets: the choice page's form carries `token`. */
interface AwaitingChoice {
  step: 'choice';
  identity: Identity;
  walletIds: string[];
  token: string;
}

type Flow = AwaitingProvider | AwaitingChoice;

const cookieName = (req: FastifyRequest) => (needsSecureCookie(req) ? '__Host-gateway_oidc' : 'gateway_oidc');
const keyMaterial = (clientSecret: string) => `dashboard-oidc-flow\0${clientSecret}`;

export const newChoiceToken = (): string => randomBytes(24).toString('base64url');

/** The flow sealed as the cookie's value (exported for tests that tamper with a flow as an attacker cannot). */
export function sealFlow(clientSecret: string, flow: Flow, expiresAtMs: number): string {
  return sealValue(keyMaterial(clientSecret), { flow, exp: expiresAtMs });
}

export function openFlow(clientSecret: string, sealed: string, nowMs: number): Flow | null {
  const v = openValue(keyMaterial(clientSecret), sealed) as { flow?: Flow; exp?: number } | null;
  if (!v || typeof v.exp !== 'number' || v.exp <= nowMs || !v.flow) return null;
  return v.flow;
}

export function setFlowCookie(reply: FastifyReply, req: FastifyRequest, clientSecret: string, flow: Flow, nowMs: number): void {
  const value = sealFlow(clientSecret, flow, nowMs + FLOW_TTL_MS);
  reply.setCookie(cookieName(req), value, { ...cookieOptions(req, 'lax'), maxAge: FLOW_TTL_MS / 1000 });
}

export function readFlowCookie(req: FastifyRequest, clientSecret: string, nowMs: number): Flow | null {
  const sealed = req.cookies[cookieName(req)];
  return sealed ? openFlow(clientSecret, sealed, nowMs) : null;
}

export function clearFlowCookie(reply: FastifyReply, req: FastifyRequest): void {
  reply.clearCookie(cookieName(req), cookieOptions(req, 'lax'));
}
