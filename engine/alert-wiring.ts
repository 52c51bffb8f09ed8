// The alerts wired to the rooms that tell them what happened (engine/alerts cannot import money or videos):
// committed charges, top-ups through this gateway, and finished videos.
import type { Alerts } from './alerts/index.ts';
import { usdNumber } from './core/money.ts';
import type { Accounts } from './money/accounts.ts';
import type { Ledger } from './money/ledger.ts';
import { spendableTotalIn } from './money/spendable.ts';
import type { FinishedVideo } from './videos/finished-video.ts';

/** The balance the alerts compare with their thresholds: the wallet's as every view counts it. */
export const alertBalance = spendableTotalIn;

/**
 * The alert watcher hears of every charge once it is committed, behind the answer (the answer's last byte waits
 * for the commit, never for the check): the watcher folds a burst into few checks of the wallet. A video's charge
 * is told by its finish (videoFinished below), which knows the wallet.
 */
export function watchedForAlerts(alerts: Alerts, accounts: Accounts): Accounts {
  return {
    ...accounts,
    charge(caller, hold, costNano, rows) {
      const charge = accounts.charge(caller, hold, costNano, rows);
      charge.committed.then(
        () => alerts.watcher.charged(caller.walletId, caller.keyId),
        () => undefined,
      );
      return charge;
    },
  };
}

/** A top-up through this gateway (admin API, the CLI through it) re-arms at once what it lifted above its threshold. */
export function toppedUpRearms(ledger: Ledger, alerts: Alerts): Ledger {
  return Object.create(ledger, {
    topUp: {
      value: async (...args: Parameters<Ledger['topUp']>) => {
        const lot = await ledger.topUp(...args);
        alerts.watcher.charged(args[0]);
        return lot;
      },
    },
  }) as Ledger;
}

/** A finished job: its charge is checked like a call's, and video.finished is written for the owner's endpoints. */
export function videoFinished(alerts: Alerts, v: FinishedVideo, log: () => { error: (o: object, m: string) => void }): void {
  if (v.costNano > 0n) alerts.watcher.charged(v.walletId, v.keyId);
  const data = {
    video: {
      id: v.id,
      object: 'video',
      model: v.model,
      status: v.status,
      seconds: v.seconds,
      size: v.size,
      error: v.errorCode ? { code: v.errorCode } : null,
    },
    usage: { seconds: v.usageSeconds, cost_usd: usdNumber(v.costNano) },
    key_id: v.keyId,
  };
  alerts.watcher.videoFinished(v.walletId, data).catch((e) => log().error({ err: e, video: v.id }, 'video.finished event not recorded'));
}
