// Fault kinds whose audit fails today because of an engine bug the lead is fixing on main. The tests stay as
// they should be and are marked `it.fails` while listed here; remove the entry with the fix.
export const KNOWN_BUGS: Record<string, string> = {};

/**
 * Bugs a fault kind finds in some runs only (it depends on where a kill lands), so `it.fails` would fail the
 * runs that miss it. The kind runs as it should; its problems matching `problems` are printed and not failed,
 * every other problem still fails it. Remove the entry with the fix.
 */
export interface IntermittentBug {
  why: string;
  problems: RegExp;
}

/** An answer the client received in full, with no charge: the charge was not committed before the answer left. */
const answerBeforeCharge = (why: string): IntermittentBug => ({ why, problems: /: received in full, no usage record: / });

const LEASES_WRITE_BEHIND = 'budget leases write a call’s charge behind its reply: a kill within flush_ms after the answer leaves loses it';
const STREAM_END_BEFORE_SETTLE = 'exact mode sends a stream’s end marker before its settle commits: a kill in between leaves it uncharged';

export const KNOWN_INTERMITTENT_BUGS: Record<string, IntermittentBug> = {
  'gateway SIGKILLed under load, every answer received in full is charged (PostgreSQL, leases on)': answerBeforeCharge(LEASES_WRITE_BEHIND),
  'gateway SIGKILLed under load, every answer received in full is charged (PGlite, leases on)': answerBeforeCharge(LEASES_WRITE_BEHIND),
  'gateway SIGKILLed under load, every answer received in full is charged (PostgreSQL, leases off)': answerBeforeCharge(STREAM_END_BEFORE_SETTLE),
  'gateway SIGKILLed under load, every answer received in full is charged (PGlite, leases off)': answerBeforeCharge(STREAM_END_BEFORE_SETTLE),
};
