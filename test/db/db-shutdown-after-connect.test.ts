// A PostgreSQL shutting down can send its FATAL 57P01 in the same packet as a new connection's ReadyForQuery. The
// pool hands the connection out before the error is parsed, and then no pool listener is on it: an 'error' event
// nobody hears ends the process. A proxy here appends that error to the first ReadyForQuery of each connection.
import { createServer, type Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../engine/db/db.ts';
import { openPg } from '../../engine/db/pg.ts';
import { postgresAvailability, REQUIRE_POSTGRES, TEST_DATABASE_URL } from '../helpers/databases.ts';

/** The backend's ErrorResponse for a fast shutdown, as PostgreSQL writes it. */
function shutdownError(): Buffer {
  const field = (code: string, value: string) => Buffer.concat([Buffer.from(code), Buffer.from(`${value}\0`)]);
  const body = Buffer.concat([
    field('S', 'FATAL'),
    field('V', 'FATAL'),
    field('C', '57P01'),
    field('M', 'terminating connection due to administrator command'),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const READY_FOR_QUERY = Buffer.from([0x5a, 0, 0, 0, 5]); // 'Z', length 5, then the status byte

/** A proxy to the test PostgreSQL that, while `cutting`, ends each new connection right after its startup. */
function startProxy(target: URL): Promise<{ server: Server; port: number; cutting: { on: boolean } }> {
  const cutting = { on: true };
  const server = createServer((client) => {
    const upstream = new Socket();
    upstream.connect(Number(target.port || 5432), target.hostname);
    let started = false;
    const cut = cutting.on;
    client.on('data', (d) => upstream.write(d));
    upstream.on('data', (d: Buffer) => {
      const ready = !started && d.length >= 6 && d.subarray(d.length - 6, d.length - 1).equals(READY_FOR_QUERY);
      if (ready) started = true;
      if (ready && cut) {
        client.end(Buffer.concat([d, shutdownError()]));
        upstream.destroy();
      } else client.write(d);
    });
    for (const s of [client, upstream]) s.on('error', () => {});
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as { port: number }).port, cutting })),
  );
}

const skip = !postgresAvailability.ok && !REQUIRE_POSTGRES;

describe.skipIf(skip)('PostgreSQL shutting down as a connection starts', () => {
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let db: Db;
  const errors: Error[] = [];

  beforeAll(async () => {
    const target = new URL(TEST_DATABASE_URL);
    proxy = await startProxy(target);
    const url = new URL(TEST_DATABASE_URL);
    url.port = String(proxy.port);
    db = await openPg({ url: url.toString(), onError: (e) => errors.push(e) });
  });

  afterAll(async () => {
    await db?.close();
    await new Promise((r) => proxy?.server.close(r));
  });

  it('fails the transaction with the shutdown error, keeps the process up, and serves once the server is back', async () => {
    const attempts = await Promise.allSettled(
      Array.from({ length: 4 }, () => db.transaction((tx) => tx.query<{ one: number }>('SELECT $1::int AS one', [1]))),
    );
    expect(attempts.map((a) => a.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(errors.map((e) => (e as { code?: string }).code)).toContain('57P01');

    proxy.cutting.on = false;
    const r = await db.transaction((tx) => tx.query<{ one: number }>('SELECT $1::int AS one', [1]));
    expect(r.rows).toEqual([{ one: 1 }]);
  });
});
