// Waiting on what a child process printed: tests that start `npm start`-like children read their banner.
/** Resolves with the first match of `pattern` in `out.text` (read again every 100 ms); rejects after `ms`. */
export function waitForOutput(out: { text: string }, pattern: RegExp, ms: number): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () => {
      const m = out.text.match(pattern);
      if (m) return resolve(m);
      if (Date.now() - started > ms) return reject(new Error(`timed out waiting for ${pattern}; output:\n${out.text}`));
      setTimeout(tick, 100);
    };
    tick();
  });
}

/** Whether a process with this pid still runs (signal 0 checks without signalling). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
