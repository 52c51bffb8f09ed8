// Key material: random secrets, their hashes and the short prefix shown to people.
// Only the sha256 of a secret is stored; the secret itself is shown once, in the creation answer.
import * as nodeCrypto from 'node:crypto';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export type KeyKind = 'api' | 'management';

/** Normal API keys start with this prefix. */
const API_KEY_PREFIX = 'sk-svc-';
/** Management keys start with this prefix. */
const MANAGEMENT_KEY_PREFIX = 'sk-svcm-';
/** Random base62 characters after the prefix: 43 characters are about 256 bits. */
const SECRET_LENGTH = 43;
/** How many leading characters of the key the `key_prefix` field shows (then an ellipsis). */
const SHOWN_PREFIX_CHARS = 12;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniform random base62 text (rejection sampling: no modulo bias). */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = randomBytes(length * 2);
    for (const b of bytes) {
      if (b < 248) out += BASE62[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function prefixFor(kind: KeyKind): string {
  return kind === 'management' ? MANAGEMENT_KEY_PREFIX : API_KEY_PREFIX;
}

/** The kind a secret claims by its prefix, or null when it has neither prefix. */
export function kindOfSecret(secret: string): KeyKind | null {
  if (secret.startsWith(MANAGEMENT_KEY_PREFIX)) return 'management';
  if (secret.startsWith(API_KEY_PREFIX)) return 'api';
  return null;
}

export function newSecret(kind: KeyKind): string {
  return prefixFor(kind) + randomBase62(SECRET_LENGTH);
}

export function newKeyId(): string {
  return `key_${randomBase62(24)}`;
}

/** A key group's id (a class). */
export function newGroupId(): string {
  return `grp_${randomBase62(24)}`;
}

export function newRequestId(): string {
  return `kreq_${randomBase62(20)}`;
}

// Every call hashes its key (twice: before and after its body): the one-shot digest of Node 20.12+ makes no
// Hash object for it; an older Node takes the stream form, whose digest is the same.
const sha256Hex: (text: string) => string =
  typeof nodeCrypto.hash === 'function'
    ? (text) => nodeCrypto.hash('sha256', text, 'hex')
    : (text) => createHash('sha256').update(text, 'utf8').digest('hex');

export function hashSecret(secret: string): string {
  return sha256Hex(secret);
}

/** `sk-svc-Ab3dE…`: never the full key. */
export function shownPrefix(secret: string): string {
  return `${secret.slice(0, SHOWN_PREFIX_CHARS)}…`;
}

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  if (x.length !== y.length || x.length === 0) return false;
  return timingSafeEqual(x, y);
}
