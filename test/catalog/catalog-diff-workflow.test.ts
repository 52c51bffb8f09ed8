// The ready CI step: .github/workflows/catalog-review.yml cannot run here, so this reads it as GitHub
// would (runs on pull requests touching catalog/, with the history the diff needs) and runs its comment
// script against a stand-in for the GitHub API: one comment, created once and then updated.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  env?: Record<string, string>;
  with?: Record<string, unknown>;
}
interface Workflow {
  on: { pull_request: { paths: string[] } };
  permissions: Record<string, string>;
  jobs: Record<string, { 'runs-on': string; steps: Step[] }>;
}

const workflow = parse(readFileSync('.github/workflows/catalog-review.yml', 'utf8')) as Workflow;
const steps = Object.values(workflow.jobs).flatMap((j) => j.steps);
const step = (match: (s: Step) => boolean) => {
  const found = steps.find(match);
  if (!found) throw new Error('step not found');
  return found;
};

describe('the catalog review workflow', () => {
  it('runs on pull requests that touch catalog/, and may comment on them', () => {
    expect(Object.keys(workflow.on)).toEqual(['pull_request']);
    expect(workflow.on.pull_request.paths).toContain('catalog/**');
    expect(workflow.permissions['pull-requests']).toBe('write');
  });

  it('checks out the whole history, installs with npm ci on Node 20, and diffs against the pull request base', () => {
    const checkout = step((s) => s.uses?.startsWith('actions/checkout@') ?? false);
    expect(checkout.with?.['fetch-depth']).toBe(0);
    expect(step((s) => s.uses?.startsWith('actions/setup-node@') ?? false).with?.['node-version']).toBe(20);
    const order = steps.map((s) => s.run ?? s.uses ?? '');
    const diff = step((s) => s.run?.includes('npx gateway catalog diff') ?? false);
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a GitHub Actions expression, as the workflow file writes it
    expect(diff.env?.BASE_SHA).toBe('${{ github.event.pull_request.base.sha }}');
    expect(diff.run).toContain('npx gateway catalog diff "$BASE_SHA" > catalog-review.md');
    expect(order.findIndex((r) => r.trim() === 'npm ci')).toBeLessThan(order.indexOf(diff.run!));
    expect(order.some((r) => r.trim() === 'npx gateway catalog check')).toBe(true);
  });

  it('posts one comment with the table, then updates it instead of adding another', async () => {
    const post = step((s) => s.uses?.startsWith('actions/github-script@') ?? false);
    const script = post.with!.script as string;
    const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (
      ...args: string[]
    ) => (...a: unknown[]) => Promise<void>;
    const run = new AsyncFunction('github', 'context', 'require', script);

    const comments: { id: number; body: string; user: { type: string } }[] = [{ id: 1, body: 'looks good', user: { type: 'User' } }];
    const calls: string[] = [];
    const github = {
      paginate: async (list: (a: unknown) => Promise<unknown>, args: unknown) => list(args),
      rest: {
        issues: {
          listComments: async () => comments,
          createComment: async ({ body, issue_number }: { body: string; issue_number: number }) => {
            calls.push(`create on #${issue_number}`);
            comments.push({ id: comments.length + 1, body, user: { type: 'Bot' } });
          },
          updateComment: async ({ comment_id, body }: { comment_id: number; body: string }) => {
            calls.push(`update ${comment_id}`);
            comments.find((c) => c.id === comment_id)!.body = body;
          },
        },
      },
    };
    const context = { repo: { owner: 'o', repo: 'r' }, payload: { pull_request: { number: 7 } } };
    let table =
      '| Model | Field | Old | New | Unit | Change |\n|---|---|---|---|---|---|\n| m | pricing.input | 1 | 2 | USD per 1M tokens | +100% |\n';
    const fakeRequire = (name: string) => {
      expect(name).toBe('fs');
      return { readFileSync: () => table };
    };

    await run(github, context, fakeRequire);
    table = 'No price, rule, door or other model changes.\n';
    await run(github, context, fakeRequire);

    expect(calls).toEqual(['create on #7', 'update 2']);
    expect(comments).toHaveLength(2);
    expect(comments[1]!.body).toContain('### Catalog review');
    expect(comments[1]!.body).toContain('No price, rule, door or other model changes.');
  });
});
