// Token estimate for when a stream was cut before the vendor reported usage (lesson 3):
// about four characters per token, rounded up, so a cut stream is never settled at zero.
export const estimateTokens = (chars: number): number => (chars > 0 ? Math.ceil(chars / 4) : 0);
