/**
 * The release on a real registry, quick variant: every public package versioned with
 * `changeset version` and published with `changeset publish` to Verdaccio on 127.0.0.1 (the
 * built `dist/` reused), twice, as docs/releasing.md cuts a release: first the repository's
 * changesets (0.1.0), then one `minor` changeset on core (0.2.0 everywhere, not a major);
 * each adapter installed alone in a bare folder outside the workspace, the README examples
 * run there; the first consumer upgraded to the second release. Built from source, with
 * MiniWoB++'s Python runtime and the core quick start: `npx tsx scripts/release-registry.ts`.
 */
import { expect, it } from 'vitest';
import { runReleaseCheck } from './release-registry.js';
import { publicPackages, repositoryRoot } from './workspace.js';

it('releases 0.1.0 then 0.2.0 of every package to a real registry; each adapter installs alone and runs', async () => {
  const dataDir = process.env.DREAMGYM_DATA_DIR;
  if (!dataDir) {
    throw new Error(
      'DREAMGYM_DATA_DIR is not set: the adapters’ README examples read their data from it.',
    );
  }
  const packages = publicPackages()
    .map((p) => p.name)
    .sort();
  const adapters = publicPackages()
    .filter((p) => p.directory.startsWith(`${repositoryRoot}/adapters/`))
    .map((p) => p.name)
    .sort((a, b) => (a === '@dreamgym/alfworld' ? -1 : b === '@dreamgym/alfworld' ? 1 : 0));
  const result = await runReleaseCheck({
    build: false,
    consumers: adapters,
    // MiniWoB++ runs on the PyPI package miniwob, which this bare folder lacks: its example must
    // fail saying how to install it from here.
    runtimeMissing: ['@dreamgym/miniwob'],
    quickStart: false,
    exampleEnv: { DREAMGYM_DATA_DIR: dataDir },
  });
  const { first, second, consumers, changelogs, upgrade } = result;
  // The fixed group at the documented versions: 0.1.0, then a core minor is 0.2.0 everywhere.
  expect(first.versions).toEqual(Object.fromEntries(packages.map((name) => [name, '0.1.0'])));
  expect(second.versions).toEqual(Object.fromEntries(packages.map((name) => [name, '0.2.0'])));
  for (const release of [first, second]) {
    // Peer ranges stay the whole major that every release of the group stays inside.
    for (const [name, peers] of Object.entries(release.peerRanges)) {
      for (const [peer, range] of Object.entries(peers))
        expect(`${name} -> ${peer}: ${range}`).toBe(`${name} -> ${peer}: 0.x`);
    }
    expect(release.peerRanges['@dreamgym/alfworld']).toEqual({ '@dreamgym/core': '0.x' });
    // The release commit holds the new changelogs; publishing tagged every package.
    expect(release.statusAfterCommit).toBe('');
    expect(release.tags).toEqual(
      expect.arrayContaining(
        Object.entries(release.versions).map(([name, version]) => `${name}@${version}`),
      ),
    );
    // @dreamgym/cli's bin publishes as it is, without npm's warning that it was invalid.
    expect(release.binPublishWarnings).toEqual({ '@dreamgym/cli': [] });
  }
  for (const name of packages) {
    expect(changelogs[name], name).toEqual({ tracked: true, versions: ['0.2.0', '0.1.0'] });
  }
  // Each adapter alone brought core as its peer, at the released version.
  for (const consumer of consumers) {
    expect(consumer.installed[consumer.package]).toBe('0.1.0');
    expect(consumer.installed['@dreamgym/core']).toBe('0.1.0');
  }
  const byName = Object.fromEntries(consumers.map((consumer) => [consumer.package, consumer]));
  expect(byName['@dreamgym/alfworld']!.exampleOutput).toMatch(
    /\{\s*type: 'put',\s*args: \[ 'apple 1', 'fridge 1' \]/,
  );
  expect(byName['@dreamgym/webshop']!.exampleOutput).toMatch(
    /type: 'click',\s*args: \[ 'Buy Now' \]/,
  );
  expect(byName['@dreamgym/webarena-lite']!.exampleOutput).toMatch(
    /type: 'type',\s*args: \[ '13', 'red shoes', '1' \]/,
  );
  const miniwob = byName['@dreamgym/miniwob']!.exampleError!;
  expect(miniwob).toMatch(/The PyPI package miniwob was not found/);
  expect(miniwob).toMatch(/\.venv\/bin\/python -m pip install miniwob==1\.1\.0/);
  expect(miniwob).not.toMatch(/scripts\//);
  // The upgrade to the new minor: the adapter and its peer core move together.
  expect(upgrade.before).toEqual({ '@dreamgym/alfworld': '0.1.0', '@dreamgym/core': '0.1.0' });
  expect(upgrade.after).toEqual({ '@dreamgym/alfworld': '0.2.0', '@dreamgym/core': '0.2.0' });
  expect(upgrade.exampleOutput).toBe(byName['@dreamgym/alfworld']!.exampleOutput);
}, 600_000);
