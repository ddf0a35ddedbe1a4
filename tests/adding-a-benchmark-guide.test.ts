/**
 * docs/adding-a-benchmark.md tells an adapter's author what the `DomainAdapter` contract does
 * not show (found so far by reading core's source): where the JSONL helpers are imported from,
 * what `meta.world` does, that predicted states carry no action list, and how the synthetic
 * reward relates to the real one. Each statement is checked against the code it describes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as core from '@dreamgym/core';
import { RewardRuleSchema } from '@dreamgym/core/experience';
import * as mdp from '@dreamgym/core/mdp';
import { describe, expect, it } from 'vitest';
import { repositoryRoot } from './workspace.js';

const guide = readFileSync(join(repositoryRoot, 'docs/adding-a-benchmark.md'), 'utf8');
/** The guide's prose with line breaks as spaces, for statements that wrap. */
const prose = guide.replace(/\s+/g, ' ');
const coreExports = JSON.parse(
  readFileSync(join(repositoryRoot, 'packages/core/package.json'), 'utf8'),
).exports as Record<string, unknown>;

describe('docs/adding-a-benchmark.md', () => {
  it('imports each name from the core entry that exports it', async () => {
    const imports = [
      ...guide.matchAll(/import \{ ([^}]+) \} from '(@dreamgym\/core(?:\/[a-z/]+)?)'/g),
    ];
    expect(imports.map((match) => match[2])).toContain('@dreamgym/core/mdp');
    for (const [statement, names, specifier] of imports) {
      const subpath = specifier!.replace('@dreamgym/core', '.');
      expect(Object.keys(coreExports), statement).toContain(subpath);
      const entry = (await import(specifier!)) as Record<string, unknown>;
      for (const name of names!.split(',').map((part) => part.trim())) {
        expect(entry[name], `${name} in ${specifier}`).toBeDefined();
      }
    }
    // The JSONL helpers are not in the root entry: the guide says where they are.
    expect('readJsonlLines' in core).toBe(false);
    expect(typeof mdp.readJsonlLines).toBe('function');
    expect(typeof mdp.parseRecord).toBe('function');
  });

  it('names only core entries that exist', () => {
    const named = new Set(guide.match(/@dreamgym\/core\/[a-z/]+[a-z]/g));
    expect(named.size).toBeGreaterThan(2);
    for (const specifier of named) {
      expect(Object.keys(coreExports), specifier).toContain(
        specifier.replace('@dreamgym/core', '.'),
      );
    }
  });

  it('says what meta.world is and that the world memory keys on it', () => {
    expect(prose).toMatch(/`meta\.world` names the world a task is played in/);
    expect(prose).toMatch(/without it a task's world is its own `id` \(`worldOf\(task\)`/);
    expect(prose).toMatch(/world memory keys on it/);
    expect(mdp.worldOf({ id: 'game-7', meta: {} })).toBe('game-7');
    expect(mdp.worldOf({ id: 'game-7~variant', meta: { world: 'game-7' } })).toBe('game-7');
  });

  it('says that predicted states carry no action list, so candidateActions parses the text', () => {
    expect(prose).toMatch(/a predicted state is text only \(no `actions`/);
    expect(prose).toMatch(/So parse the state text/);
  });

  it("states the synthetic reward rule's defaults and how real success is read", () => {
    expect(prose).toMatch(
      /The synthetic environment pays the paper's outcome reward: 1 on the step that ends the episode with success, 0 on every other step/,
    );
    expect(RewardRuleSchema.parse({})).toEqual({
      mode: 'outcome',
      successReward: 1,
      failureReward: 0,
      successEndsEpisode: false,
    });
    expect(prose).toMatch(/by the environment's `info\.success`, else by a positive final reward/);
  });
});
