// The database pool's figures on /metrics for a gateway on PostgreSQL: an idle gateway shows no client waiting,
// though the scrape itself queries the ledger (gateway_holds_in_flight), so an alert on waiting > 0 stays quiet.
import { describe, expect, it } from 'vitest';
import { postgresAvailability } from '../helpers/databases.ts';
import { useSuiteGateway } from '../helpers/leased-gateway.ts';
import { series } from '../helpers/metrics-text.ts';

describe.skipIf(!postgresAvailability.ok)('/metrics on an idle PostgreSQL gateway', () => {
  const { gateway } = useSuiteGateway('postgres');

  it('reports no client waiting for a connection, scrape after scrape', async () => {
    const t = gateway();
    // A call first, so the pool holds idle connections the scrape's own query takes one of.
    const res = await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${t.apiKey}` } });
    expect(res.status).toBe(200);
    for (let i = 0; i < 5; i++) {
      const text = await (await fetch(`${t.url}/metrics`)).text();
      expect(series(text, 'gateway_holds_in_flight')).toBe(0);
      expect(series(text, 'gateway_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
      expect(series(text, 'gateway_db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(1);
      expect(series(text, 'gateway_db_pool_connections', { state: 'waiting' }), text).toBe(0);
    }
  });
});
