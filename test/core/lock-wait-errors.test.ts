// Each way the ledger's wait for a locked wallet can end reaches the client as the one lock 503 (nothing charged),
// in the door's shape; a fault that is no lock wait keeps the generic 503. The ledger hands a call either the
// statement's own lock_not_available or, after looking at what was locked, TablesLocked wrapping it (the look can
// find the rows let go in between: test/money/ledger.lock-wait.test.ts plays that race on PostgreSQL).
import { describe, expect, it } from 'vitest';
import { renderError, toGatewayError } from '../../engine/core/errors.ts';
import { TablesLocked } from '../../engine/money/retry.ts';
import { messagesErrors } from '../../transforms/util/vendor-errors.ts';

/** An error as `pg` throws it for a SQLSTATE. */
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'ERROR' });
const lockTimeout = () => pgError('55P03', 'canceling statement due to lock timeout');

const LOCK_WAITS: [string, () => unknown][] = [
  ['lock_timeout (55P03)', lockTimeout],
  ['NOWAIT refused (55P03)', () => pgError('55P03', 'could not obtain lock on row in relation "credit_lots"')],
  ['TablesLocked after a lock_timeout', () => new TablesLocked(lockTimeout())],
];

const FAULTS: [string, () => unknown][] = [
  ['a plain Error', () => new Error('boom')],
  ['a lost connection', () => new Error('Connection terminated unexpectedly')],
  ['the server shutting down (57P01)', () => pgError('57P01', 'terminating connection due to administrator command')],
  ['a statement cancelled (57014)', () => pgError('57014', 'canceling statement due to user request')],
  ['a deadlock the retries did not mend (40P01)', () => pgError('40P01', 'deadlock detected')],
  ['an error wrapping a fault', () => new Error('wrapped', { cause: new Error('boom') })],
  ['not an Error', () => 'a string'],
];

describe('toGatewayError: a lock wait that ended', () => {
  it.each(LOCK_WAITS)('%s is the lock 503: nothing charged, retry shortly, in either door error body', (_, make) => {
    const err = toGatewayError(make());
    expect(err.status).toBe(503);
    expect(err.type).toBe('api_error');
    expect(err.message).toBe("The wallet's balance is locked by another operation right now. Nothing was charged; retry shortly.");
    expect((renderError(err).body.error as { message: string }).message).toMatch(/Nothing was charged/);
    expect(renderError(err, messagesErrors.body).body).toEqual({ type: 'error', error: { type: 'api_error', message: err.message } });
  });

  it.each(FAULTS)('%s stays the generic 503', (_, make) => {
    const err = toGatewayError(make());
    expect(err.status).toBe(503);
    expect(err.message).toBe('Temporary fault on the service side. Retry later.');
  });
});
