// What a reload says it changed: a pure diff of two snapshots, carried by Runtime.reload and logged.
import { afterEach, describe, expect, it } from 'vitest';
import { logReload } from '../../engine/admin/reload-route.ts';
import { describeReload, summariseReload } from '../../engine/catalog/reload-summary.ts';
import { loadSnapshot, Runtime, type Snapshot } from '../../engine/catalog/runtime.ts';
import { type TempTree, tempCatalogTree } from '../helpers/temp-catalog.ts';

const shipped = loadSnapshot({ config: 'config', catalog: 'catalog' }, 1);

/** A deep copy of the shipped snapshot, changed by `edit`. */
function changed(edit: (s: { config: Snapshot['config']; catalog: Snapshot['catalog'] }) => void) {
  const copy = {
    config: structuredClone(shipped.config),
    catalog: { dir: shipped.catalog.dir, models: structuredClone(shipped.catalog.models) },
  };
  edit(copy);
  return copy;
}

let tree: TempTree | undefined;
afterEach(() => tree?.remove());

describe('reload summary', () => {
  it('names the models added, removed, repriced and otherwise changed', () => {
    const after = changed(({ catalog }) => {
      const m = catalog.models;
      m.set('x-new-1', { ...m.get('d-3')!, id: 'x-new-1' });
      m.delete('a-small-3.5');
      m.get('d-3')!.pricing.input = 7;
      m.get('b-5')!.rules = [];
      m.get('c-flash-3')!.line += 10; // moved in its file: no change
    });
    const s = summariseReload(shipped, after);
    expect(s).toMatchObject({
      added: ['x-new-1'],
      removed: ['a-small-3.5'],
      repriced: ['d-3'],
      changed: ['b-5'],
      config: [],
      needsRestart: [],
    });
    expect(describeReload(s)).toBe('models added: x-new-1; models removed: a-small-3.5; models repriced: d-3; models changed: b-5');
  });

  it('names the config files that changed and the keys only a restart applies', () => {
    const after = changed(({ config }) => {
      config.limits.body_limit_bytes += 1;
      config.limits.call_timeout_ms.chat! += 1; // read per call: no restart
      config.doors.chat!.path = '/v2/chat/completions';
      config.doors.chat!.refuse = [];
      delete (config.doors as Record<string, unknown>).moderations;
      config.billing.plan_restricted_vendors = ['c', 'd']; // read at use by admission and GET /v1/models: no restart
      config.billing.ledger = { queues: 2, audit_interval_ms: 60_000 }; // queues: read at each move; the audit's timer: at start
      config.rules['drop-sampling']!.drops = ['temperature'];
      config.vendors.f = { ...config.vendors.b!, name: 'Vendor F' }; // its routes are read at start
      config.vendors.a!.http2 = true; // read at each new connection: no restart
    });
    const s = summariseReload(shipped, after);
    expect(s.config).toEqual(['doors', 'vendors', 'billing', 'limits', 'rules']);
    expect(s.needsRestart).toEqual([
      'limits.body_limit_bytes',
      'billing.ledger.audit_interval_ms',
      'doors.chat.path',
      'doors.moderations (removed)',
      'vendors.f (added)',
    ]);
    expect(describeReload(s)).toContain(
      'needs a restart to apply: limits.body_limit_bytes, billing.ledger.audit_interval_ms, doors.chat.path',
    );
  });

  it('an unchanged reload says so', () => {
    const s = summariseReload(
      shipped,
      changed(() => undefined),
    );
    expect(describeReload(s)).toBe('no change');
  });

  it('Runtime.reload carries the summary, and the log line reads it', () => {
    tree = tempCatalogTree();
    const runtime = new Runtime(tree);
    tree.edit('catalog/vendor-d.yaml', (text) => text.replace(/(d-3:\n(?:.*\n)*?\s+pricing:[^\n]*?input: )[\d.]+/, '$1 7'));
    tree.edit('config/limits.yaml', (text) => text.replace('connect_timeout_ms: 10000', 'connect_timeout_ms: 5000'));
    const result = runtime.reload();
    expect(result.changes).toMatchObject({ repriced: ['d-3'], config: ['limits'], needsRestart: ['limits.connect_timeout_ms'] });

    const lines: [string, unknown, string][] = [];
    const log = {
      info: (o: unknown, m: string) => lines.push(['info', o, m]),
      warn: (o: unknown, m: string) => lines.push(['warn', o, m]),
      error: (o: unknown, m: string) => lines.push(['error', o, m]),
    };
    logReload(log as never, result);
    logReload(log as never, runtime.reload());
    logReload(log as never, { ok: false, version: 2, problems: ['x.yaml:1: broken'] });
    expect(lines).toEqual([
      [
        'warn',
        { version: 2, changes: result.changes },
        'catalog and config reloaded (version 2): models repriced: d-3; config changed: limits; needs a restart to apply: limits.connect_timeout_ms',
      ],
      ['info', expect.anything(), 'catalog and config reloaded (version 3): no change'],
      ['error', { problems: ['x.yaml:1: broken'] }, 'reload refused; the running catalog stays'],
    ]);
  });
});
