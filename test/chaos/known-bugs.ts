// Fault kinds whose audit fails today because of an engine bug the lead is fixing on main. The tests stay as
// they should be and are marked `it.fails` while listed here; remove the entry with the fix.
export const KNOWN_BUGS: Record<string, string> = {};
