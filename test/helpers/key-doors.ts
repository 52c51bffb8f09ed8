// The key doors on a bare Fastify app over one test database, for the key and quota tests.
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll } from 'vitest';
import type { Clock } from '../../engine/core/clock.ts';
import type { Db } from '../../engine/db/db.ts';
import { createKeyService, type KeyService, registerKeyRoutes } from '../../engine/keys/index.ts';

export interface KeyDoorsFixture {
  db: Db;
  keys: KeyService;
  app: FastifyInstance;
}

/** Registers beforeAll/afterAll in the calling describe; read the fields inside tests. */
export function useKeyDoors(getDb: () => Db, clock: Clock): KeyDoorsFixture {
  const fixture = {} as KeyDoorsFixture;
  beforeAll(async () => {
    fixture.db = getDb();
    fixture.keys = createKeyService(fixture.db, { clock });
    fixture.app = Fastify();
    await registerKeyRoutes(fixture.app, { keys: fixture.keys, db: fixture.db, clock });
    await fixture.app.ready();
  });
  afterAll(async () => {
    await fixture.app?.close();
    await fixture.keys?.close();
  });
  return fixture;
}

let walletSeq = 0;
/** A wallet row straight in the database (the key tests need no ledger). */
export async function makeWallet(db: Db, opts: { splits?: boolean | undefined; slots?: number; owner?: string } = {}): Promise<string> {
  const id = `w_test_${process.pid}_${++walletSeq}_${Math.random().toString(36).slice(2, 8)}`;
  await db.query('INSERT INTO wallets (id, owner_id, splits_usage, key_slots) VALUES ($1, $2, $3, $4)', [
    id,
    opts.owner ?? 'owner-1',
    opts.splits ?? false,
    opts.slots ?? 100,
  ]);
  return id;
}
