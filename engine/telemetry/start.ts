// Starts and stops this process's traces: the SDK is loaded only when an OTLP endpoint is set, so a gateway
// without telemetry pays one null check per call.
import { readFileSync } from 'node:fs';
import { projectPath } from '../core/project-path.ts';
import type { TelemetryConfig } from './config.ts';
import type { Telemetry, TelemetryLog } from './sdk.ts';

/** The running telemetry, or null when the environment asked for none (telemetryConfig said null). */
export async function startTelemetryIfAsked(config: TelemetryConfig | null, log: () => TelemetryLog): Promise<Telemetry | null> {
  if (!config) return null;
  const { startTelemetry } = await import('./sdk.ts');
  const { version } = JSON.parse(readFileSync(projectPath(import.meta.url, 'package.json'), 'utf8')) as { version: string };
  return startTelemetry(config, version, log);
}

/** The last spans go out; an unreachable collector holds up a stop no longer than `ms`. */
export async function stopTelemetry(telemetry: Telemetry | null, ms: number): Promise<void> {
  if (!telemetry) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    void telemetry
      .shutdown()
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(timer);
        resolve();
      });
  });
}
