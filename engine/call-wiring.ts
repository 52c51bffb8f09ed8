// The part of the gateway that serves calls: accounts, video jobs and model doors put together. Wiring sits at the
// top level of engine/ because it joins calls, videos, money and alerts, which no one room may do.
import type { FastifyInstance } from 'fastify';
import { protocols } from '../transforms/protocols/index.ts';
import { videoFinished, watchedForAlerts } from './alert-wiring.ts';
import type { Alerts } from './alerts/index.ts';
import { registerModelDoors } from './calls/doors.ts';
import { modelSuggester, modelsCallerMayCall } from './calls/model-list.ts';
import type { Runtime } from './catalog/runtime.ts';
import type { Clock } from './core/clock.ts';
import type { Db } from './db/db.ts';
import type { GatewayEnv } from './gateway-env.ts';
import type { KeyService } from './keys/index.ts';
import type { Accounts } from './money/accounts.ts';
import type { GatewayMoney } from './money/ledger-wiring.ts';
import { spendableOf } from './money/spendable.ts';
import type { Telemetry } from './telemetry/sdk.ts';
import { idsNotStoredFor } from './usage/vendor-responses.ts';
import type { VendorSide } from './vendor-wiring.ts';
import { createVideoService, type VideoService } from './videos/index.ts';

interface CallParts {
  env: GatewayEnv;
  runtime: Runtime;
  clock: Clock;
  db: Db;
  money: GatewayMoney;
  keys: KeyService;
  alerts: Alerts;
  vendors: VendorSide;
  telemetry: Telemetry | null;
  /** Told of each video job's charge, which lands after its request has been answered. */
  videoCharged: (vendor: string, nano: bigint) => void;
  /** The app's log once it exists (read at each use). */
  log: () => { error: (o: object, m: string) => void };
}

interface CallServing {
  accounts: Accounts;
  videos: VideoService;
  /** The model doors of config/doors.yaml, GET /v1/models and GET /v1/credits (the video doors register apart). */
  registerDoors(app: FastifyInstance): void;
}

export function callServing(parts: CallParts): CallServing {
  const { env, runtime, clock, db, money, alerts, vendors, telemetry } = parts;
  const accounts = watchedForAlerts(alerts, money.accounts(parts.keys, modelSuggester(runtime, clock)));
  // What a model door and a video job both need to reach a vendor and charge the wallet.
  const callDeps = { runtime, accounts, routes: vendors.routes, upstream: vendors.upstream, registry: { protocols }, clock, telemetry };
  const videos = createVideoService({
    ...callDeps,
    db,
    dataDir: env.dataDir,
    fileStore: env.videoStore,
    pollMs: env.videoPollMs,
    onFinished: (v) => {
      parts.videoCharged(v.vendor, v.costNano);
      videoFinished(alerts, v, parts.log);
    },
  });
  return {
    accounts,
    videos,
    registerDoors(app) {
      registerModelDoors(app, {
        ...callDeps,
        credits: (walletId) => spendableOf(db, walletId, clock.now()),
        modelsFor: (caller) => modelsCallerMayCall(money.ledger, runtime, caller),
        idsNotStored: (walletId, ids) => idsNotStoredFor(db, walletId, ids),
      });
    },
  };
}
