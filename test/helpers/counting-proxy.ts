// A loopback proxy in front of PostgreSQL that counts the client's flights: each chunk the client's socket delivers.
// Statements the client writes in one turn arrive as one chunk, so this counts round trips a transaction waits for.
// It can also lose the answer to a COMMIT: the server commits, and the client sees its connection end instead.
import { connect, createServer, type Socket } from 'node:net';
import { afterAll, beforeAll } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { openTestPostgres, type TestPostgres } from './databases.ts';

export interface CountingProxy {
  /** `url` with its port moved to the proxy's. */
  url: string;
  flights: number;
  /** The next flight carrying a COMMIT is answered by the server, and that answer never reaches the client. */
  loseNextCommitAnswer(): void;
  close(): Promise<void>;
}

export async function startCountingProxy(url: string): Promise<CountingProxy> {
  const target = new URL(url);
  const sockets = new Set<Socket>();
  let loseCommitAnswer = false;
  const counted: CountingProxy = {
    url: '',
    flights: 0,
    loseNextCommitAnswer: () => {
      loseCommitAnswer = true;
    },
    close: async () => {},
  };
  const proxy = createServer((client) => {
    const server = connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, server]) sockets.add(s);
    let losing = false;
    client.on('data', (chunk) => {
      counted.flights++;
      if (loseCommitAnswer && chunk.includes('COMMIT')) [loseCommitAnswer, losing] = [false, true];
      server.write(chunk);
    });
    server.on('data', (chunk) => {
      if (!losing) client.write(chunk);
      else if (chunk.includes('COMMIT')) client.destroy(); // the server's CommandComplete of the COMMIT: it committed
    });
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const viaProxy = new URL(url);
  viaProxy.port = String((proxy.address() as { port: number }).port);
  counted.url = viaProxy.toString();
  counted.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => proxy.close(r));
  };
  return counted;
}

/**
 * For a describe block: a scratch schema on the test PostgreSQL (migrated unless told not), and a `Db` of `max`
 * connections reaching it through a counting proxy, opened before the block's tests and closed after them.
 */
export function postgresThroughProxy(opts: { migrate?: boolean; max?: number } = {}): {
  pgs: TestPostgres;
  proxy: CountingProxy;
  db: Db;
} {
  const opened = {} as { pgs: TestPostgres; proxy: CountingProxy; db: Db };
  beforeAll(async () => {
    opened.pgs = await openTestPostgres({ migrate: opts.migrate ?? true });
    opened.proxy = await startCountingProxy(opened.pgs.url);
    opened.db = await openPg({ url: opened.proxy.url, max: opts.max ?? 1 });
  });
  afterAll(async () => {
    await opened.db?.close();
    await opened.proxy?.close();
    await opened.pgs?.cleanup();
  });
  return opened;
}
