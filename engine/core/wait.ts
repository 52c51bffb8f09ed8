// A bounded wait: every wait on something another part of the gateway must do has a limit (docs/TIGER_STYLE.md).

/** Whether `p` settled (resolved or rejected) within `ms`; the timer is cleared either way. */
export async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const lapse = new Promise<false>((resolve) => {
    timer = setTimeout(resolve, ms, false);
  });
  const settled = p.then(
    () => true,
    () => true,
  );
  const done = await Promise.race([settled, lapse]);
  clearTimeout(timer);
  return done;
}
