// `gateway wallet sign-in-link` on PostgreSQL writes the link to the shared database itself. It refuses when no
// gateway answers at the link's origin, since a link to an origin nothing listens on would reach the owner and fail.
import { systemClock } from '../core/clock.ts';
import { errors } from '../core/errors.ts';
import { createSessionStore } from '../dashboard/sessions.ts';
import { signInLinkAnswer } from '../dashboard/sign-in-route.ts';
import type { Db } from '../db/db.ts';

type Env = Record<string, string | undefined>;

/** Long enough for a gateway on this host or network to answer /healthz, short enough for a command. */
const PROBE_TIMEOUT_MS = 2_000;

/** Where owners reach the dashboard, or why the command cannot tell: GATEWAY_PUBLIC_URL, else a gateway found at HOST:PORT. */
async function dashboardOrigin(env: Env): Promise<{ origin: string } | { problem: string }> {
  if (env.GATEWAY_PUBLIC_URL) return { origin: env.GATEWAY_PUBLIC_URL };
  const host = env.HOST && env.HOST !== '0.0.0.0' && env.HOST !== '::' ? env.HOST : '127.0.0.1';
  const origin = `http://${host}:${env.PORT ?? 8080}`;
  if (await gatewayAnswersAt(origin)) return { origin };
  return {
    problem:
      `No link was made: GATEWAY_PUBLIC_URL is not set and no gateway answers at ${origin} (HOST and PORT), so the link would ` +
      'lead nowhere. Set GATEWAY_PUBLIC_URL to the origin owners reach the gateway at (https://gateway.example.org), ' +
      'or HOST and PORT to where a gateway of this database listens, and run the command again.',
  };
}

/** Whether a gateway answers GET /healthz at `origin` as ours does ({"status":"ok"}), not merely whether the port is open. */
async function gatewayAnswersAt(origin: string): Promise<boolean> {
  try {
    const res = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    return res.ok && ((await res.json()) as { status?: unknown }).status === 'ok';
  } catch {
    return false;
  }
}

export async function signInLink(db: Db, walletId: string, env: Env = process.env) {
  // The origin first: a link that cannot be used is never written.
  const found = await dashboardOrigin(env);
  if ('problem' in found) throw new Error(found.problem);
  const link = await createSessionStore(db, systemClock).issueSignIn(walletId);
  if (!link) throw errors.notFound(`No wallet '${walletId}'.`);
  return signInLinkAnswer(found.origin, link);
}
