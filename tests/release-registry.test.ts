/**
 * The release on a real registry, quick variant: `@dreamgym/core` and `@dreamgym/alfworld`
 * versioned with `changeset version` and published with `changeset publish` to Verdaccio on
 * 127.0.0.1 (the built `dist/` reused); a consumer outside the workspace installs
 * `@dreamgym/alfworld` alone and runs its README example; a second release bumps the fixed
 * group and the consumer upgrades with `npm update`. Every public package, built from source,
 * every adapter and the core quick start: `npx tsx scripts/release-registry.ts` (minutes).
 */
import { expect, it } from 'vitest';
import { runReleaseCheck } from './release-registry.js';

it('publishes to a real registry and a consumer installs, runs and upgrades @dreamgym/alfworld alone', async () => {
  const dataDir = process.env.DREAMGYM_DATA_DIR;
  if (!dataDir) {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set: the ALFWorld README example reads $DREAMGYM_DATA_DIR/alfworld.',
    );
  }
  const result = await runReleaseCheck({
    build: false,
    only: ['@dreamgym/core', '@dreamgym/alfworld'],
    consumers: ['@dreamgym/alfworld'],
    quickStart: false,
    exampleEnv: { DREAMGYM_DATA_DIR: dataDir },
  });
  const { first, second, consumers, upgrade } = result;
  expect(Object.keys(first).sort()).toEqual(['@dreamgym/alfworld', '@dreamgym/core']);
  // The fixed group: one version for every package, in both releases.
  expect(new Set(Object.values(first)).size).toBe(1);
  expect(new Set(Object.values(second)).size).toBe(1);
  const [major, minor, patch] = first['@dreamgym/core']!.split('.').map(Number);
  expect(second['@dreamgym/core']).toBe(`${major}.${minor}.${patch! + 1}`);
  // The consumer got core as the adapter's peer dependency, at the released version.
  expect(consumers[0]!.installed).toEqual(first);
  expect(consumers[0]!.exampleOutput).toMatch(
    /\{\s*type: 'put',\s*args: \[ 'apple 1', 'fridge 1' \]/,
  );
  expect(upgrade.before).toEqual(first);
  expect(upgrade.after).toEqual(second);
  expect(upgrade.exampleOutput).toBe(consumers[0]!.exampleOutput);
}, 600_000);
