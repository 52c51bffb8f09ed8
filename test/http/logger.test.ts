// Issue 40: pino is the process's one log, handed to Fastify as its logger instance: JSON lines when stdout is
// not a terminal (log collectors, the tests), one readable line per entry when it is (an operator at `npm start`).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { gatewayLogger } from '../../engine/http/logger.ts';
import { startTestGateway } from '../helpers/gateway.ts';

afterEach(() => vi.restoreAllMocks());

/** What the logger wrote to stdout while `f` ran. */
function stdoutOf(f: () => void): string {
  let text = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    text += String(chunk);
    return true;
  });
  f();
  vi.restoreAllMocks();
  return text;
}

describe('the log', () => {
  it('on a terminal: time, level name, message and fields on one line, warnings coloured, an error’s stack below', () => {
    const log = gatewayLogger('info', undefined, true);
    const text = stdoutOf(() => {
      log.info({ vendor: 'b', status: 200, route: { index: 0 } }, 'call completed');
      log.warn('a warning');
      log.error({ err: new Error('boom') }, 'request failed');
    });
    const [info, warn, error] = text.split('\n');
    expect(info).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}call completed {2}vendor=b {2}status=200 {2}route=\{"index":0\}$/);
    expect(warn).toMatch(/^\d\d:\d\d:\d\d\.\d{3} /);
    expect(warn!.slice(13)).toBe('\x1b[33mWARN \x1b[0m a warning'); // yellow, so a problem stands out
    expect(error).toContain('request failed');
    expect(text).toMatch(/\nError: boom\n\s+at /);
    expect(text).not.toContain('"level"');
  });

  it('elsewhere: pino JSON lines, numeric level and epoch time, keys redacted', () => {
    const text = stdoutOf(() => gatewayLogger('info', undefined, false).info({ headers: { authorization: 'Bearer sk-secret' } }, 'hello'));
    const entry = JSON.parse(text) as Record<string, unknown>;
    expect(entry).toMatchObject({ level: 30, msg: 'hello', headers: { authorization: '[Redacted]' } });
    expect(typeof entry.time).toBe('number');
  });

  it('is the instance the gateway’s Fastify app logs to', async () => {
    const lines: string[] = [];
    const t = await startTestGateway({ logger: { level: 'info', stream: { write: (l: string) => void lines.push(l) } } });
    try {
      t.gw.app.log.info('from the app');
      await fetch(`${t.url}/healthz`);
      expect(lines.some((l) => JSON.parse(l).msg === 'from the app')).toBe(true);
      expect(lines.some((l) => JSON.parse(l).msg === 'request completed')).toBe(true);
    } finally {
      await t.close();
    }
  });
});
