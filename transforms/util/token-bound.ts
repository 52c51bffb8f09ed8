// An upper bound on the tokens of a text for vendors whose tokenizer is not published: a weight per Unicode
// script, calibrated against a published tokenizer (gpt-tokenizer's o200k_base) on the Korean and English
// prose under test/fixtures/estimate, erring above (test/transforms/token-estimate.test.ts prints the table).
// Korean is why it exists: at four characters a token, a Hangul syllable (about one token) was billed a quarter.
// o200k spends about 0.8 of a token on a syllable, but tokenizers that are not published spend about one (the
// lessons' figure), so a syllable weighs a whole token.
// Latin letters and digits are weighed by the run (a word, a number) as well as by the character, since a
// tokenizer spends a token on a short word whatever its length, and one on each group of three digits. What
// prose never has is weighed heavily, so text made to look unlike words (random letters, base64) is not
// underestimated: letters of a run past its twelfth, capitals inside a run, letters and digits run together.

/** What the bound counts in a text. */
interface ScriptCounts {
  hangul: number;
  /** Han ideographs, kana and compatibility ideographs. */
  cjk: number;
  latin: number;
  latinRuns: number;
  /** Letters of a run past its twelfth: prose words are shorter, random letters are not. */
  latinPastWord: number;
  /** A capital right after a small letter in one run (base64, identifiers). */
  innerCapitals: number;
  /** A letter right after a digit or a digit right after a letter (base64, hashes, formulas). */
  letterDigitSwitches: number;
  /** Groups of up to three digits in each run of digits. */
  digitGroups: number;
  spaces: number;
  newlines: number;
  /** ASCII punctuation and symbols. */
  punctuation: number;
  /** Code points outside the Basic Multilingual Plane (most emoji), and lone surrogates. */
  astral: number;
  /** Every other character: other scripts and symbols of the BMP. */
  other: number;
}

/** Tokens per counted unit, and a constant per text; chosen so no calibration text is ever underestimated. */
const SCRIPT_WEIGHTS: Readonly<ScriptCounts> & { perText: number } = {
  hangul: 1,
  cjk: 1.6,
  latin: 0.1,
  latinRuns: 0.53,
  latinPastWord: 0.55,
  innerCapitals: 1.2,
  letterDigitSwitches: 0.8,
  digitGroups: 1.48,
  spaces: 0.21,
  newlines: 0.83,
  punctuation: 0.45,
  astral: 2,
  other: 0.6,
  perText: 5,
};

type Run = 'latin' | 'digit' | null;

const isHangul = (cp: number) => (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0x1100 && cp <= 0x11ff) || (cp >= 0x3130 && cp <= 0x318f);
const isCjk = (cp: number) =>
  (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x3040 && cp <= 0x30ff) || (cp >= 0xf900 && cp <= 0xfaff);
const isLatin = (cp: number) => (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
const isDigit = (cp: number) => cp >= 0x30 && cp <= 0x39;

/** The counts of one text. */
function countScripts(text: string): ScriptCounts {
  const c: ScriptCounts = {
    hangul: 0,
    cjk: 0,
    latin: 0,
    latinRuns: 0,
    latinPastWord: 0,
    innerCapitals: 0,
    letterDigitSwitches: 0,
    digitGroups: 0,
    spaces: 0,
    newlines: 0,
    punctuation: 0,
    astral: 0,
    other: 0,
  };
  let run: Run = null;
  let runLength = 0;
  let previousCapital = false;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    let now: Run = null;
    if (isLatin(cp)) {
      now = 'latin';
      c.latin++;
      const capital = cp <= 0x5a;
      if (run !== 'latin') {
        c.latinRuns++;
        runLength = 1;
      } else {
        runLength++;
        if (runLength > 12) c.latinPastWord++;
        if (capital && !previousCapital) c.innerCapitals++;
      }
      previousCapital = capital;
    } else if (isDigit(cp)) {
      now = 'digit';
      runLength = run === 'digit' ? runLength + 1 : 1;
      if (runLength % 3 === 1) c.digitGroups++;
    } else if (cp > 0xffff || (cp >= 0xd800 && cp <= 0xdfff)) c.astral++;
    else if (isHangul(cp)) c.hangul++;
    else if (isCjk(cp)) c.cjk++;
    else if (cp === 0x0a) c.newlines++;
    else if (cp === 0x20 || cp === 0x09 || cp === 0x0d) c.spaces++;
    else if (cp < 0x80) c.punctuation++;
    else c.other++;
    if ((run === 'latin' && now === 'digit') || (run === 'digit' && now === 'latin')) c.letterDigitSwitches++;
    run = now;
  }
  return c;
}

/** The bound for counts: never below what the calibration tokenizer counts, on every calibration text. */
function tokensFromCounts(c: ScriptCounts, w: typeof SCRIPT_WEIGHTS = SCRIPT_WEIGHTS): number {
  let sum = 0;
  for (const key of Object.keys(c) as (keyof ScriptCounts)[]) sum += c[key] * w[key];
  return sum === 0 ? 0 : Math.ceil(sum) + w.perText;
}

/** The bound on one text's tokens. */
export const boundTokens = (text: string): number => tokensFromCounts(countScripts(text));
