// Korean particles chosen from the word they follow (the batchim rule), so a Korean text never needs the fallback
// `을(를)`: a catalog text writes the pair after a parameter, `{label}{을/를}`, and it is settled from the value as
// read aloud.

/** The pairs a catalog may write: the form after a final consonant first, then the form after a vowel. */
const PAIRS: Record<string, readonly [string, string]> = {
  '을/를': ['을', '를'],
  '이/가': ['이', '가'],
  '은/는': ['은', '는'],
  '과/와': ['과', '와'],
  '으로/로': ['으로', '로'],
};

/** A parameter, and when a particle pair follows it, what stands between (closing marks, our tags) and the pair. */
export const PARAM_WITH_PARTICLE = /\{(\w+)\}(?:((?:<\/\w+>|["'’”)\]])*)\{(을\/를|이\/가|은\/는|과\/와|으로\/로)\})?/g;

type Ending = 'vowel' | 'rieul' | 'consonant';

// Digits as read in Korean: 영 일 이 삼 사 오 육 칠 팔 구.
const DIGITS: Ending[] = ['consonant', 'rieul', 'vowel', 'consonant', 'vowel', 'vowel', 'consonant', 'rieul', 'rieul', 'vowel'];

/** A lone Latin letter read by its name: 엘, 알 end in ㄹ; 엠, 엔 in another consonant; the rest in a vowel. */
function letterName(c: string): Ending {
  if (c === 'l' || c === 'r') return 'rieul';
  return c === 'm' || c === 'n' ? 'consonant' : 'vowel';
}

/** A Latin word read as Korean writes it: "lab" 랩, "book" 북, "long" 롱, "mail" 메일; "class" 클래스, "teacher" 티처, "test" 테스트. */
function latinWord(word: string): Ending {
  if (/(l|le)$/.test(word)) return 'rieul';
  // A t after another consonant is written 트 ("development" 디벨롭먼트, "test" 테스트): it ends in a vowel.
  if (/[^aeiou]t$/.test(word)) return 'vowel';
  return /([bkmnpt]|ng|ck)$/.test(word) ? 'consonant' : 'vowel';
}

/** How the last sounded part of a text ends; a text with nothing to read counts as ending in a vowel. */
function endingOf(text: string): Ending {
  const plain = text
    .replace(/<[^>]*>/g, '')
    .replace(/&[#\w]+;/g, '')
    .replace(/[^0-9A-Za-z\uAC00-\uD7A3]+$/, '');
  const last = plain.at(-1);
  if (last === undefined) return 'vowel';
  const code = last.charCodeAt(0);
  if (code >= 0xac00 && code <= 0xd7a3) {
    const final = (code - 0xac00) % 28;
    return final === 0 ? 'vowel' : final === 8 ? 'rieul' : 'consonant';
  }
  if (/\d/.test(last)) return DIGITS[Number(last)]!;
  const word = /[A-Za-z]+$/.exec(plain)![0].toLowerCase();
  // A word without a vowel is read letter by letter ("kr" 케이알): it ends as its last letter's name does.
  return word.length === 1 || !/[aeiouy]/.test(word) ? letterName(word.at(-1)!) : latinWord(word);
}

/** The particle of a pair (`을/를`) that follows `word`: 으로 becomes 로 after ㄹ as after a vowel. */
export function particleFor(word: string, pair: string): string {
  const [afterConsonant, afterVowel] = PAIRS[pair]!; // PARAM_WITH_PARTICLE matches only the pairs listed
  const ending = endingOf(word);
  if (pair === '으로/로') return ending === 'consonant' ? afterConsonant : afterVowel;
  return ending === 'vowel' ? afterVowel : afterConsonant;
}
