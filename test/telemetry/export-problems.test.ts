// A collector that is down is not silent: the SDK's report of the failed export reaches the gateway's log at
// warn, and a call's trace is made and ended all the same (the export runs behind the calls, never in them).
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startTelemetry, type Telemetry } from '../../engine/telemetry/sdk.ts';

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

let telemetry: Telemetry | undefined;
afterAll(() => telemetry?.shutdown().catch(() => undefined));

describe('an unreachable collector', () => {
  it('is reported in the gateway log at warn', async () => {
    // The SDK's own readings (this file runs in a process of its own): send at once, give up on a send soon.
    process.env.OTEL_BSP_SCHEDULE_DELAY = '50';
    process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '1000';
    const warnings: { obj: object; msg?: string | undefined }[] = [];
    const log = { warn: (obj: object, msg?: string) => warnings.push({ obj, msg }) };
    const config = {
      tracesUrl: `http://127.0.0.1:${await closedPort()}/v1/traces`,
      protocol: 'http/json' as const,
      serviceName: 'test',
      captureContent: false,
    };
    telemetry = await startTelemetry(config, '0.0.0', () => log);
    telemetry.startCall({ door: 'chat', requestId: 'r1', headers: {} }).end({ status: 200 });
    const until = Date.now() + 15_000;
    while (warnings.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect(warnings[0]?.msg).toBe('telemetry: the OpenTelemetry SDK reports a problem');
    expect(JSON.stringify(warnings[0]?.obj)).toMatch(/ECONNREFUSED|export|connect/i);
  }, 20_000);
});
