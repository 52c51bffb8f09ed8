// A port for a test's server. Picked below Linux's ephemeral range (32768 and up), where an outgoing connection could
// take it while a killed process is started again on it, and checked free: services listen there too (RabbitMQ's
// 25672 ended a CI run once).
import { createServer } from 'node:net';

const bindable = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });

/** A port between 20000 and 32000 nothing listens on right now. */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (await bindable(port)) return port;
  }
  throw new Error('no free port between 20000 and 32000 in 50 tries');
}
