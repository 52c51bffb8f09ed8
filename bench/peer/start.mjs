// Starts Portkey's gateway (the bench's peer) on 127.0.0.1 only: its start script calls
// serve({fetch, port}) without a hostname, which listens on every interface, so every listen in this
// process is pinned to loopback before the script loads. --headless skips its log UI.
//
//   node bench/peer/start.mjs PORT      prints the gateway's own banner, then "peer listening on http://127.0.0.1:PORT"
import net from 'node:net';

const port = Number(process.argv[2] ?? 8787);
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function pinnedToLoopback(...args) {
  // listen(port[, host][, backlog][, cb]) or listen({port, host, …}[, cb])
  if (typeof args[0] === 'object' && args[0] !== null) args[0] = { ...args[0], host: '127.0.0.1' };
  else if (typeof args[0] === 'number' || typeof args[0] === 'string') {
    if (typeof args[1] === 'string' || args[1] === undefined) args[1] = '127.0.0.1';
    else args.splice(1, 0, '127.0.0.1');
  }
  this.once('listening', () => console.log(`peer listening on http://127.0.0.1:${this.address().port}`));
  return listen.apply(this, args);
};
console.clear = () => {};
process.argv.splice(2, process.argv.length, `--port=${port}`, '--headless');
await import('@portkey-ai/gateway/build/start-server.js');
