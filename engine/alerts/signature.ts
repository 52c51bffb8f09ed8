// Deliveries are signed like Stripe's: `x-gateway-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`.
// The timestamp is inside what is signed, so a receiver that refuses old timestamps refuses replayed captures;
// the secret is shown to the owner once, at creation.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_HEADER = 'x-gateway-signature';

export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64url')}`;

function signatureOf(secret: string, unixSeconds: number, body: string): string {
  return createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
}

export const signatureHeader = (secret: string, unixSeconds: number, body: string) =>
  `t=${unixSeconds},v1=${signatureOf(secret, unixSeconds, body)}`;

/** What a receiver does (docs/api.md shows the same): true when a v1 signature matches and t is within tolerance. */
export function verifySignature(secret: string, header: string, body: string, nowSeconds: number, toleranceSeconds = 300): boolean {
  const parts = header.split(',').map((p) => p.trim().split('='));
  const t = Number(parts.find(([k]) => k === 't')?.[1]);
  if (!Number.isFinite(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  const expected = Buffer.from(signatureOf(secret, t, body), 'hex');
  return parts
    .filter(([k]) => k === 'v1')
    .some(([, v]) => {
      const given = Buffer.from(v ?? '', 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    });
}
