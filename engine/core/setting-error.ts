// A start setting (an environment variable) the gateway cannot use. Its message is the whole story for the
// operator, so `npm start` prints it as one sentence, without a stack.
export class SettingError extends Error {
  override name = 'SettingError';
}
