// The vendor's routes, tried in order; what moves an attempt on to the next route is decided here only. A 401 or
// 403 refuses the gateway's own credential, not the client's, so routes sent the same credential are skipped too.

import type { AttemptSpan, CallTrace } from '../telemetry/call-trace.ts';
import { type CallSignal, onAbort } from './call-signal.ts';
import { startDeadline } from './deadline.ts';
import { answerHeader, RouteFailure, type UpstreamAnswer } from './upstream.ts';
import type { Route } from './vendor-routes.ts';

/** 429 and every 5xx (including vendor A's 529 overloaded) move on to the next route. */
const isRetryableStatus = (status: number) => status === 429 || status >= 500;

/** Answers that say the vendor took nothing on (rate limited, overloaded): a request sent once may go elsewhere. */
const NOT_TAKEN = new Set([429, 503]);

/** The vendor refused the credential the gateway sent it (the client's own key was never sent there). */
const isCredentialRefusal = (status: number) => status === 401 || status === 403;

interface RouteLog {
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

/** What one route's answer came to: the caller's result, or why the next route should be asked. */
export type RouteStep<T> = { done: true; value: T } | { done: false; problem: string };

export interface RouteLoop<T> {
  /**
   * Sends the request on one route. `traceHeaders`, present when the call is traced, go to the vendor with it
   * (`traceparent`), so the vendor's spans join the call's trace.
   */
  send(route: Route, signal: CallSignal | undefined, traceHeaders?: Record<string, string>): Promise<UpstreamAnswer>;
  /**
   * Reads an answer that is not retryable. `depth` counts the attempts that failed before this one. Once
   * anything reached the client it must finish (done), never throw a RouteFailure.
   */
  read(answer: UpstreamAnswer, route: Route, depth: number): Promise<RouteStep<T>>;
  log: RouteLog;
  /** Fields every log line of the loop carries (which job it is). */
  logContext?: object;
  /** Ends the whole loop (a call's time limit, its client leaving): thrown on, never a route failure. */
  signal?: CallSignal;
  /**
   * The client leaving, for a call that runs on without it: work under way goes on, but no other route (nor a
   * second pass after a wait) is asked for a client already gone, so no vendor starts work nobody will read.
   */
  clientGone?: CallSignal;
  /** The time limit of one attempt: running out of it fails that route only. */
  attemptTimeoutMs?: number;
  /**
   * Longest Retry-After waited for before one more pass over the routes, when every route failed and at least
   * one asked to be retried; without it there is one pass only.
   */
  retryAfterMaxMs?: number;
  /** The call's trace, when telemetry is on: each attempt is a span of it. */
  trace?: CallTrace | null | undefined;
  /**
   * A request not safe to send twice (a video job's create): once one may have reached a vendor (the connection
   * broke after it left, or the vendor answered anything but 429, 503 or a refused credential), no other route is
   * asked, as that could make a second of it.
   */
  sendsOnce?: boolean;
}

type RoutesOutcome<T> =
  | { done: true; value: T }
  | {
      done: false;
      failedAttempts: number;
      lastProblem?: string | undefined;
      /** Routes whose vendor refused the gateway's credential (401/403), when any did. */
      credentialRefused?: { route: Route; status: number }[];
      /** The longest Retry-After the last pass was sent: the client's to honour, since the gateway waits no more. */
      retryAfterMs?: number;
    };

type Attempt<T> =
  | { done: true; value: T }
  | { done: false; problem: string; retryAfterMs?: number | undefined; refusedStatus?: number; last?: boolean };

export async function tryRoutes<T>(routes: Route[], loop: RouteLoop<T>): Promise<RoutesOutcome<T>> {
  let failed = 0;
  let lastProblem: string | undefined;
  const refused: { route: Route; status: number }[] = [];
  // Made on the first refusal only: nearly every call has none.
  let refusedKeys: Set<string> | undefined;
  let retryAfterMs: number | undefined;
  for (let pass = 0; pass < 2; pass++) {
    retryAfterMs = undefined;
    for (const route of routes) {
      if (loop.clientGone?.aborted) break; // no vendor starts work for a client already gone
      if (refusedKeys?.has(route.key)) continue;
      const attempt = await attemptRoute(route, failed, loop);
      if (attempt.done) return attempt;
      failed++;
      lastProblem = attempt.problem;
      if (attempt.last) return { done: false, failedAttempts: failed, lastProblem };
      if (attempt.refusedStatus !== undefined) {
        refused.push({ route, status: attempt.refusedStatus });
        (refusedKeys ??= new Set()).add(route.key);
        logCredentialRefused(loop, route, attempt.refusedStatus);
        continue;
      }
      loop.log.warn(
        { ...loop.logContext, vendor: route.vendor, route: route.index, reason: attempt.problem },
        'route failed, trying the next',
      );
      if (attempt.retryAfterMs !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, attempt.retryAfterMs);
    }
    if (loop.retryAfterMaxMs === undefined || retryAfterMs === undefined || retryAfterMs > loop.retryAfterMaxMs || pass === 1) break;
    loop.log.warn({ ...loop.logContext, retryAfterMs }, 'every route failed; waiting as the vendor asked, then one more pass');
    await sleep(retryAfterMs, loop.signal, loop.clientGone);
  }
  return {
    done: false,
    failedAttempts: failed,
    lastProblem,
    ...(refused.length ? { credentialRefused: refused } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
  };
}

/** At error level: only the operator can fix it, and until then every call to the vendor fails. */
function logCredentialRefused(loop: RouteLoop<unknown>, route: Route, status: number): void {
  loop.log.error(
    { ...loop.logContext, vendor: route.vendor, route: route.index, status },
    `vendor ${route.vendor.toUpperCase()} refused the gateway's credential (GATEWAY_VENDOR_${route.vendor.toUpperCase()}_KEY) with ${status}; routes sent the same credential are skipped`,
  );
}

async function attemptRoute<T>(route: Route, depth: number, loop: RouteLoop<T>): Promise<Attempt<T>> {
  const ownTime = loop.attemptTimeoutMs === undefined ? undefined : startDeadline(loop.attemptTimeoutMs, loop.signal);
  const signal = ownTime?.signal ?? loop.signal;
  const span = loop.trace ? loop.trace.attempt(`${route.vendor}${route.index}`, depth) : null;
  let status: number | undefined;
  try {
    const answer = await loop.send(route, signal, span?.headers());
    status = answer.status;
    if (isCredentialRefusal(answer.status)) {
      await answer.body.dump().catch(() => undefined);
      span?.failed(`credential refused ${answer.status}`, answer.status);
      return {
        done: false,
        problem: `route ${route.index} refused the gateway's credential (${answer.status})`,
        refusedStatus: answer.status,
      };
    }
    if (isRetryableStatus(answer.status)) {
      await answer.body.dump().catch(() => undefined);
      span?.failed(`answered ${answer.status}`, answer.status);
      return {
        done: false,
        problem: `route ${route.index} answered ${answer.status}`,
        retryAfterMs: parseRetryAfter(answerHeader(answer, 'retry-after')),
        last: loop.sendsOnce === true && !NOT_TAKEN.has(answer.status),
      };
    }
    const step = await loop.read(answer, route, depth);
    endAttempt(span, step, answer.status);
    return step.done ? step : { ...step, last: loop.sendsOnce === true };
  } catch (e) {
    const outOfOwnTime = ownTime?.passed === true && loop.signal?.aborted !== true;
    if (e instanceof RouteFailure || outOfOwnTime) {
      span?.failed(outOfOwnTime ? 'timed out' : status === undefined ? 'connection failed' : 'unusable answer', status);
      const arrived = outOfOwnTime || (e as RouteFailure).mayHaveArrived;
      return { done: false, problem: `route ${route.index}: ${(e as Error).message}`, last: loop.sendsOnce === true && arrived };
    }
    span?.failed('call ended', status);
    throw e;
  } finally {
    ownTime?.end();
  }
}

/**
 * An answer the caller read: used, or unusable (a body that is not JSON, a stream that failed before its first
 * byte). The reason recorded is the gateway's own words, never the vendor's text, which may quote the prompt.
 */
function endAttempt<T>(span: AttemptSpan | null, step: RouteStep<T>, status: number): void {
  if (!span) return;
  if (step.done) span.answered(status);
  else span.failed('unusable answer', status);
}

/** Retry-After in seconds or as an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Waits `ms`; rejects when `signal` fires, resolves early when `wake` does. */
const sleep = (ms: number, signal: CallSignal | undefined, wake: CallSignal | undefined) =>
  new Promise<void>((resolve, reject) => {
    const forget: (() => void)[] = [];
    const end = (settle: () => void) => {
      clearTimeout(timer);
      for (const f of forget) f();
      settle();
    };
    const timer = setTimeout(() => end(resolve), ms);
    if (signal) forget.push(onAbort(signal, () => end(() => reject(signal.reason))));
    if (wake) forget.push(onAbort(wake, () => end(resolve)));
  });
