// Issue 26: the systemd unit shipped in deploy/ is one systemd accepts (`systemd-analyze verify`), starts the
// gateway the way `npm start` does, and waits for a draining stop at least as long as the longest call limit.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const UNIT = readFileSync('deploy/gateway.service', 'utf8');
const setting = (name: string) => [...UNIT.matchAll(new RegExp(`^${name}=(.*)$`, 'gm'))].map((m) => m[1]!);

const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
const noAnalyze = analyze.error ? `systemd-analyze is not installed here (${analyze.error.message})` : '';
if (noAnalyze) console.warn(`[systemd-unit] skipping the verify test: ${noAnalyze}`);

describe('deploy/gateway.service', () => {
  it.skipIf(noAnalyze !== '')('passes systemd-analyze verify with no complaint', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gw-unit-'));
    try {
      // verify checks that ExecStart's program exists: this machine's node stands in where it lives elsewhere.
      const node = existsSync('/usr/bin/node') ? '/usr/bin/node' : process.execPath;
      writeFileSync(join(dir, 'gateway.service'), UNIT.replaceAll('/usr/bin/node ', `${node} `));
      const r = spawnSync('systemd-analyze', ['verify', join(dir, 'gateway.service')], { encoding: 'utf8' });
      // A setting it cannot parse is only a warning on stderr (exit 0): both must be clean.
      expect({ status: r.status, stderr: r.stderr.trim() }).toEqual({ status: 0, stderr: '' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs bin/start.mjs directly, reloads with SIGHUP, and stops with SIGTERM to the primary', () => {
    expect(setting('ExecStart')).toEqual(['/usr/bin/node /opt/gateway/bin/start.mjs']);
    expect(existsSync('bin/start.mjs')).toBe(true);
    expect(setting('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(setting('KillSignal')).toEqual(['SIGTERM']);
    expect(setting('KillMode')).toEqual(['mixed']);
    expect(setting('Environment').join(' ')).toContain('GATEWAY_WORKERS=auto');
  });

  it('waits for a drain longer than the longest call limit of config/limits.yaml', () => {
    const limits = parse(readFileSync('config/limits.yaml', 'utf8')) as { call_timeout_ms: Record<string, number> };
    const longestS = Math.max(...Object.values(limits.call_timeout_ms)) / 1000;
    expect(Number(setting('TimeoutStopSec')[0])).toBeGreaterThanOrEqual(longestS + 5);
  });
});
