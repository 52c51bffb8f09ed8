// What the dashboard's pages need from the rest of the gateway; engine/gateway.ts hands it over.

import type { Alerts } from '../alerts/index.ts';
import type { Clock } from '../core/clock.ts';
import type { DisplayCurrency } from '../core/money.ts';
import type { Db } from '../db/db.ts';
import type { IdentityProvider } from '../identity/provider.ts';
import type { KeyService } from '../keys/service.ts';
import type { Ledger } from '../money/ledger.ts';
import type { VideoStore } from '../videos/store.ts';
import type { SessionStore } from './sessions.ts';

export interface DashboardDeps {
  db: Db;
  ledger: Ledger;
  keys: KeyService;
  clock: Clock;
  sessions: SessionStore;
  videos: VideoStore;
  /** GATEWAY_PUBLIC_URL, when set: the provider's callback address is built on it. */
  publicUrl?: string | undefined;
  /** The school's identity provider (GATEWAY_OIDC_*); absent: sign-in links only. */
  identity?: IdentityProvider | undefined;
  /** Alert thresholds and webhooks (the webhooks page); absent: no such page. */
  alerts?: Pick<Alerts, 'store' | 'queued'>;
  /** billing.yaml's display_currency in force (read per request, so a reload changes the next page); absent: dollars. */
  displayCurrency?: () => DisplayCurrency | null;
}
