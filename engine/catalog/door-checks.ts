// What config/doors.yaml must hold against the transforms: every protocol a door names exists and covers
// the vendors it serves, and every step a chain names is a transform.
import * as registry from '../../transforms/index.ts';
import { protocolNameFor, type DoorConfig, type GatewayConfig, type ProtocolConfig } from './config.ts';
import type { Locate } from './yaml-file.ts';

const SINGLE_STEPS = {
  answer: { names: registry.answerTransforms, what: 'an answer transform' },
  stream: { names: registry.streamTranslators, what: 'a stream translator' },
  usage: { names: registry.usageReaders, what: 'a usage reader' },
} as const;

/** `doors` places values in config/doors.yaml. */
export function doorProblems(cfg: GatewayConfig, doors: Locate): string[] {
  const problems: string[] = [];
  for (const door of Object.values(cfg.doors)) {
    problems.push(...protocolChoiceProblems(door, doors));
    for (const [name, protocol] of Object.entries(door.protocols)) {
      const at = (...path: (string | number)[]) => doors([door.name, 'protocols', name, ...path]);
      const label = `door '${door.name}' protocol '${name}'`;
      problems.push(...stepProblems(protocol, label, at));
    }
  }
  return problems;
}

/** Every protocol a door names exists, and every vendor the door serves speaks one. */
function protocolChoiceProblems(door: DoorConfig, at: Locate): string[] {
  const problems: string[] = [];
  for (const [vendor, protocol] of Object.entries(door.vendor_protocol)) {
    if (!door.protocols[protocol]) {
      problems.push(`${at([door.name, 'vendor_protocol', vendor])}: door '${door.name}' names protocol '${protocol}', which it does not define`);
    }
  }
  for (const vendor of door.serves.vendors) {
    if (!protocolNameFor(door, vendor)) {
      problems.push(`${at([door.name, 'vendor_protocol'])}: door '${door.name}' serves vendor ${vendor} but names no protocol for it`);
    }
  }
  return problems;
}

function stepProblems(protocol: ProtocolConfig, label: string, at: (...path: (string | number)[]) => string): string[] {
  const problems: string[] = [];
  protocol.request.forEach((step, i) => {
    if (!registry.requestTransforms[step]) {
      problems.push(`${at('request', i)}: ${label}: request step '${step}' is not a request transform (transforms/index.ts)`);
    }
  });
  for (const [field, { names, what }] of Object.entries(SINGLE_STEPS)) {
    const step = protocol[field as keyof typeof SINGLE_STEPS];
    if (step !== undefined && !(step in names)) problems.push(`${at(field)}: ${label}: ${field} '${step}' is not ${what} (transforms/index.ts)`);
  }
  return problems;
}
