// Alerts before money runs out, put together: the address guard (GATEWAY_WEBHOOKS_ALLOW_PRIVATE), the
// watcher that detects crossings, the delivery worker, and the doors. engine/gateway.ts wires the watcher
// to committed charges, top-ups and finished videos, registers the doors, and starts and stops the workers.

import type { FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.ts';
import type { DisplayCurrency } from '../core/money.ts';
import { SettingError } from '../core/setting-error.ts';
import type { Db } from '../db/db.ts';
import type { KeyService } from '../keys/index.ts';
import { type AddressGuard, createAddressGuard, type Resolve } from './address-guard.ts';
import { DeliveryWorker } from './delivery-worker.ts';
import { ALLOW_PRIVATE_SETTING, DELIVERY_POLICY, type DeliveryPolicy } from './policy.ts';
import { registerAlertRoutes } from './routes.ts';
import type { StoreDeps } from './store.ts';
import { AlertWatcher, type WatcherDeps } from './watcher.ts';

export { listDeliveries, replayEvent } from './deliveries.ts';
export { EVENT_TYPES } from './events.ts';
export { createWebhook, deleteWebhook, listWebhooks, parseSettings, readSettings, settingsView, writeSettings } from './store.ts';

type Log = { warn: (o: object, m: string) => void; error: (o: object, m: string) => void };

export interface Alerts {
  watcher: AlertWatcher;
  worker: DeliveryWorker;
  guard: AddressGuard;
  /** What the doors and the dashboard need to change settings and endpoints. */
  store: StoreDeps;
  /** A delivery was queued here: send it now. */
  queued(): void;
  routes(app: FastifyInstance, keys: KeyService): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

/** GATEWAY_WEBHOOKS_ALLOW_PRIVATE: `1`/`true` allows private and loopback receivers; anything else but unset stops the start. */
export function allowPrivateFrom(env: Record<string, string | undefined>): boolean {
  const raw = env[ALLOW_PRIVATE_SETTING];
  if (raw === undefined || raw === '' || raw === '0' || raw === 'false') return false;
  if (raw === '1' || raw === 'true') return true;
  throw new SettingError(`${ALLOW_PRIVATE_SETTING} must be 1 or 0, not '${raw}'`);
}

export function createAlerts(opts: {
  db: Db;
  clock: Clock;
  allowPrivate: boolean;
  log: () => Log;
  resolve?: Resolve;
  policy?: DeliveryPolicy;
  /** billing.yaml's display currency in force, for the webhook payloads. */
  currency?: () => DisplayCurrency | null;
  /** The wallet's balance as the views count it (alert-wiring.ts), for the balance thresholds. */
  balanceOf: WatcherDeps['balanceOf'];
}): Alerts {
  const guard = createAddressGuard({ allowPrivate: opts.allowPrivate, resolve: opts.resolve });
  const worker = new DeliveryWorker({ db: opts.db, guard, log: opts.log }, opts.policy ?? DELIVERY_POLICY);
  const queued = () => worker.kick();
  const watcher = new AlertWatcher({
    db: opts.db,
    clock: opts.clock,
    log: opts.log,
    queued,
    currency: opts.currency,
    balanceOf: opts.balanceOf,
  });
  const store: StoreDeps = { db: opts.db, clock: opts.clock, guard, changed: (walletId) => watcher.forget(walletId) };
  return {
    watcher,
    worker,
    guard,
    store,
    queued,
    routes: (app, keys) => registerAlertRoutes(app, { ...store, keys, queued }),
    start() {
      watcher.start();
      worker.start();
    },
    async stop() {
      await watcher.stop();
      await worker.stop();
    },
  };
}
