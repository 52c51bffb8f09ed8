// Runs the vendor simulator stand-alone: `npx tsx simulator/main.ts`.
import { startSimulator } from './index.ts';

const num = (v: string | undefined) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : undefined);

const sim = await startSimulator({
  host: process.env.SIM_HOST,
  port: num(process.env.SIM_PORT),
  videoStepMs: num(process.env.SIM_VIDEO_STEP_MS),
  streamChunkDelayMs: num(process.env.SIM_STREAM_DELAY_MS),
});
process.stdout.write(`vendor simulator on ${sim.url} (route URLs: ${sim.routeUrl('<name>')})\n`);
const stop = () => {
  sim.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
