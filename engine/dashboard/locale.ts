// The dashboard's two languages. Its own small file so the texts (i18n.ts) and the formats (format.ts) can
// both name a locale without importing each other.
const LOCALES = ['en', 'ko'] as const;
export type Locale = (typeof LOCALES)[number];

export const isLocale = (v: unknown): v is Locale => v === 'en' || v === 'ko';

/** The BCP 47 tag Intl formats with: US English, Korean as written in Korea. */
export const intlTag = (l: Locale): string => (l === 'ko' ? 'ko-KR' : 'en-US');
