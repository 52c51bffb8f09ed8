// Issue 40: docs/deploy.md is all an operator needs: it names no file outside the repository, every file and
// README section it names exists, and it covers HTTPS in front with GATEWAY_PUBLIC_URL and the operator commands
// on a host.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const DEPLOY = readFileSync('docs/deploy.md', 'utf8');
const README_SECTIONS = [...readFileSync('README.md', 'utf8').matchAll(/^## (.+)$/gm)].map((m) => m[1]!.trim());

describe('docs/deploy.md', () => {
  it('names no path outside the repository, and every repository file it names exists', () => {
    expect(DEPLOY).not.toMatch(/\/work\/|\.\.\//);
    const named = [...DEPLOY.matchAll(/`((?:docs|engine|deploy|config|catalog|test|bin)\/[\w./-]+?)`/g)].map((m) => m[1]);
    expect(named.length).toBeGreaterThan(5);
    for (const path of named) expect(existsSync(path!), path).toBe(true);
  });

  it('names only README sections that exist', () => {
    const cited = [...DEPLOY.matchAll(/README, ([A-Z][\w\s]+?)[;)]/g)].map((m) => m[1]!.replace(/\s+/g, ' '));
    expect(cited.length).toBeGreaterThan(0);
    for (const section of cited) expect(README_SECTIONS, section).toContain(section);
  });

  it('says how to put HTTPS in front with GATEWAY_PUBLIC_URL, and how to run the operator commands on a host', () => {
    expect(DEPLOY).toMatch(/^## HTTPS in front, and GATEWAY_PUBLIC_URL$/m);
    expect(DEPLOY).toContain('proxy_set_header Host $host;');
    expect(DEPLOY).toMatch(/^## Running the operator commands on a host$/m);
    expect(DEPLOY).toContain('. /etc/gateway/gateway.env');
  });
});
