// `gateway wallet sign-in-link <wallet-id>` on PostgreSQL: writes the one-time link to the shared database
// itself (on the embedded database the command goes through the running gateway's admin API instead).
// The link's origin is GATEWAY_PUBLIC_URL, else http://HOST:PORT as `npm start` listens by default.
import { systemClock } from '../core/clock.ts';
import type { Db } from '../db/db.ts';
import { errors } from '../core/errors.ts';
import { createSessionStore } from '../dashboard/sessions.ts';
import { signInLinkAnswer } from '../dashboard/sign-in-route.ts';

export function dashboardOrigin(env: Record<string, string | undefined>): string {
  if (env.GATEWAY_PUBLIC_URL) return env.GATEWAY_PUBLIC_URL;
  const host = env.HOST && env.HOST !== '0.0.0.0' && env.HOST !== '::' ? env.HOST : '127.0.0.1';
  return `http://${host}:${env.PORT ?? 8080}`;
}

export async function signInLink(db: Db, walletId: string, env: Record<string, string | undefined> = process.env) {
  const link = await createSessionStore(db, systemClock).issueSignIn(walletId);
  if (!link) throw errors.notFound(`No wallet '${walletId}'.`);
  return signInLinkAnswer(dashboardOrigin(env), link);
}
