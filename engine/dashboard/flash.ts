// A one-time note from a form POST to the page its 303 leads to, so every form can redirect and a refresh repeats
// nothing while a new secret is still shown once. Sealed under the session's cookie secret, and taken by deleting it.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Clock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';

/** Long enough to follow a redirect on a slow phone; short, since the note may hold new keys. */
const FLASH_TTL_MS = 5 * 60_000;

const sessionHash = (secret: string) => createHash('sha256').update(secret).digest('hex');
const keyOf = (material: string) => createHash('sha256').update(material).digest();

/**
 * A value sealed with AES-256-GCM under a key derived from `keyMaterial`: unreadable and unforgeable without it.
 * Also seals the identity provider's sign-in flow into its cookie (oidc-flow-cookie.ts).
 */
export function sealValue(keyMaterial: string, value: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(keyMaterial), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), body].map((b) => b.toString('base64url')).join('.');
}

/** The value sealValue sealed under the same key material, or null when it was not (another key, or damaged). */
export function openValue(keyMaterial: string, sealed: string): unknown {
  try {
    const [iv, tag, body] = sealed.split('.').map((p) => Buffer.from(p, 'base64url'));
    if (!iv || !tag || !body) return null; // not three parts: damaged
    const decipher = createDecipheriv('aes-256-gcm', keyOf(keyMaterial), iv);
    decipher.setAuthTag(tag);
    return JSON.parse(Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8'));
  } catch {
    return null; // not ours (another secret) or damaged: as good as absent
  }
}

const seal = (secret: string, value: unknown) => sealValue(`dashboard-flash\0${secret}`, value);
const open = (secret: string, sealed: string) => openValue(`dashboard-flash\0${secret}`, sealed);

export interface FlashStore {
  /** Leaves a note for the session's next page; a newer note replaces an unread one. */
  put(sessionSecret: string, value: unknown): Promise<void>;
  /** The note, once: null when there is none, it was read already, or it expired. */
  take(sessionSecret: string): Promise<unknown>;
}

export function createFlashStore(db: Db, clock: Clock): FlashStore {
  return {
    async put(secret, value) {
      const expires = new Date(clock.now().getTime() + FLASH_TTL_MS).toISOString();
      await db.query(
        `INSERT INTO dashboard_flash (session_hash, sealed, expires_at) VALUES ($1, $2, $3::timestamptz)
         ON CONFLICT (session_hash) DO UPDATE SET sealed = EXCLUDED.sealed, expires_at = EXCLUDED.expires_at`,
        [sessionHash(secret), seal(secret, value), expires],
      );
    },
    async take(secret) {
      const res = await db.query<{ sealed: string; expires_at: Date | string }>(
        `DELETE FROM dashboard_flash WHERE session_hash = $1 RETURNING sealed, expires_at`,
        [sessionHash(secret)],
      );
      const row = res.rows[0];
      if (!row || new Date(row.expires_at).getTime() <= clock.now().getTime()) return null;
      return open(secret, row.sealed);
    },
  };
}
