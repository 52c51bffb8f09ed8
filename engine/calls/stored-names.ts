// A body naming something the vendor stored is served only when the caller's wallet made it: one vendor account
// serves every wallet, so the vendor would replay another school's conversation. Another wallet's id is answered as
// one that never existed.
import { errors } from '../core/errors.ts';
import type { Protocol, StoredName } from '../core/protocol.ts';

/** The ids among those asked that the wallet's recorded answers lack (engine/usage/vendor-responses.ts). */
export type IdsNotStored = (walletId: string, ids: readonly string[]) => Promise<string[]>;

/** An id as the refusal quotes it: a client's made-up id may be long. */
const quoted = (id: string): string => `'${id.length > 80 ? `${id.slice(0, 80)}…` : id}'`;

function notFound(name: StoredName): Error {
  if (name.kind === 'conversation')
    return errors.storedNotFound(
      `${name.field} names ${quoted(name.id)}, which is not this wallet's: the gateway makes no conversations, so none ` +
        'belongs to a wallet. Continue a response with previous_response_id instead. Nothing was sent or charged.',
      name.field,
    );
  return errors.storedNotFound(
    `${name.field} names ${quoted(name.id)}, which no call of this wallet stored: a call may continue only the responses ` +
      "(and their output items) of its own wallet's calls, while their usage records are kept. Nothing was sent or charged.",
    name.field,
  );
}

/** Throws a 404 naming the first field whose id the caller's wallet did not store; a body naming none costs no query. */
export async function refuseNamesNotStored(wire: Protocol, body: Record<string, unknown>, walletId: string, notStored: IdsNotStored) {
  const names = wire.stored?.namedIn(body) ?? [];
  if (names.length === 0) return;
  const conversation = names.find((n) => n.kind === 'conversation');
  if (conversation) throw notFound(conversation);
  const missing = new Set(
    await notStored(
      walletId,
      names.map((n) => n.id),
    ),
  );
  const first = names.find((n) => missing.has(n.id));
  if (first) throw notFound(first);
}
