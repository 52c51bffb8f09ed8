// Token estimate for when a stream broke before the vendor reported usage:
// about four characters per token, rounded up, so a cut stream is never settled at zero.
export const estimateTokens = (chars: number): number => (chars > 0 ? Math.ceil(chars / 4) : 0);
