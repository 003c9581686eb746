/** Deterministic random strings for differential tokenizer tests (mulberry32 PRNG). */
export function makeRng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const POOLS: string[][] = [
  [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'],
  [...'0123456789'],
  [' ', ' ', ' ', '\t', '\n', '\r', '\r\n', '\u00a0', '\u0085', '\ufeff', '\u2003', '\u3000', '\u000b', '\u000c'],
  [...".,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`"],
  ["'s", "'S", "'t", "'re", "'RE", "'ve", "'m", "'ll", "'d", "'\u017f", "'\u017fa"],
  [...'éèüößçñÅØæœ'],
  [...'日本語中文한국어ひらがなカタカナ'],
  ['😀', '🦙', '👍🏽', '👨‍👩‍👧', '🏳️‍🌈', '🇫🇷', '\u200d', '\ufe0f', 'e\u0301'],
  [...'Ελληνικάрусский'],
  [...'مرحبانمस्ते'],
];

export function randomText(rng: () => number, maxLen = 24, extra: string[] = []): string {
  const len = Math.floor(rng() * maxLen);
  let s = '';
  for (let i = 0; i < len; i++) {
    if (extra.length > 0 && rng() < 0.05) {
      s += extra[Math.floor(rng() * extra.length)];
      continue;
    }
    const pool = POOLS[Math.floor(rng() * POOLS.length)]!;
    s += pool[Math.floor(rng() * pool.length)];
  }
  return s;
}
