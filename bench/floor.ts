// The floor: the same stack as the gateway (fastify in, undici out) with nothing of a gateway's own work: no
// key, no catalog, no transform, no hold, no charge. The body is parsed and sent on; a whole answer is read and
// parsed (any gateway that bills must read its usage) and sent back as it came; a stream is piped. What the
// gateway costs beyond this row is its own; what this row costs beyond direct is the stack's.
//
//   node --import tsx bench/floor.ts <stubUrl>      prints "bench floor on http://127.0.0.1:PORT"
import Fastify from 'fastify';
import { Pool } from 'undici';

const stubUrl = process.argv[2];
if (!stubUrl) throw new Error('usage: bench/floor.ts <stubUrl>');
const upstream = new Pool(stubUrl, { connections: 4096 });
const app = Fastify({ logger: false, bodyLimit: 10 * 1024 * 1024 });

app.post('/*', async (req, reply) => {
  const body = req.body as { stream?: boolean };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  for (const name of ['authorization', 'x-api-key', 'anthropic-version']) {
    const v = req.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  const answer = await upstream.request({ method: 'POST', path: req.url, headers, body: JSON.stringify(body) });
  reply.code(answer.statusCode).header('content-type', String(answer.headers['content-type'] ?? 'application/json'));
  if (body.stream === true) return reply.send(answer.body);
  const raw = await answer.body.text();
  JSON.parse(raw); // what a gateway reads its usage from
  return reply.send(raw);
});

const url = await app.listen({ host: '127.0.0.1', port: Number(process.env.FLOOR_PORT ?? 0) });
console.log(`bench floor on ${url}`);
const stop = () =>
  void app
    .close()
    .then(() => upstream.close())
    .then(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
