// A start setting (an environment variable) the gateway cannot use. Its message is the whole story for the
// operator, so `npm start` prints it as one sentence, without a stack.
export class SettingError extends Error {
  override name = 'SettingError';
}

/** Whether a setting that names a web address does: an absolute http: or https: URL. */
export function isHttpAddress(raw: string): boolean {
  try {
    const url = new URL(raw);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}
