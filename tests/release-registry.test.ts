/**
 * The release on a real registry, quick variant: every public package versioned with
 * `changeset version` and published with `changeset publish` to Verdaccio on 127.0.0.1 (the
 * built `dist/` reused), twice, as docs/releasing.md cuts a release: first the repository's
 * changesets (0.1.0), then one `minor` changeset on core (0.2.0 everywhere, not a major);
 * each adapter installed alone in a bare folder outside the workspace, the README examples
 * run there (MiniWoB++'s first without its Python runtime, then after the `npx @dreamgym/cli
 * doctor --fix` its error names); `@dreamgym/llama` alone with the torch trainer it ships; the
 * first consumer upgraded to the second release. Built from source, with the core quick start:
 * `npx tsx scripts/release-registry.ts`.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
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
    // fail saying how to install it from here; what it says then sets it up (a real virtualenv,
    // a real pip install from PyPI) and the example runs.
    runtimeMissing: ['@dreamgym/miniwob'],
    runtimeFix: {
      '@dreamgym/miniwob': [['npx', '@dreamgym/cli', 'doctor', '--fix', '--only', 'miniwob']],
    },
    // @dreamgym/llama alone, with the torch trainer it ships; the project's virtualenv has the
    // trainer's requirements (torch is a 3 GB download: the check does not install it again).
    llamaTrainer: { venv: join(repositoryRoot, '.venv') },
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
  const miniwob = byName['@dreamgym/miniwob']!;
  expect(miniwob.exampleError).toMatch(/The PyPI package miniwob was not found/);
  expect(miniwob.exampleError).toMatch(/npx @dreamgym\/cli doctor --fix --only miniwob/);
  expect(miniwob.exampleError).not.toMatch(/scripts\//);
  // The fix the error names, from the installed package: the consumer's own .venv, the pin its
  // python/requirements.txt ships; then the example runs on the real pages.
  expect(miniwob.fixOutput).toMatch(
    /^miniwob +fixing +no virtualenv at \S+\/consumers\/miniwob\/\.venv/m,
  );
  expect(miniwob.fixOutput).toMatch(/^\$ python3(\.11)? -m venv \S+\/consumers\/miniwob\/\.venv$/m);
  expect(miniwob.fixOutput).toMatch(
    /^\$ \S+\/\.venv\/bin\/python -m pip install --disable-pip-version-check --no-deps --no-input -r \S+\/consumers\/miniwob\/node_modules\/@dreamgym\/miniwob\/python\/requirements\.txt$/m,
  );
  expect(miniwob.fixOutput).toMatch(/^miniwob +ok +\S+ has the MiniWoB\+\+ task pages/m);
  expect(miniwob.exampleOutput).toMatch(/reward: /);
  // The torch trainer ships in @dreamgym/llama and the installed package finds it.
  const trainer = result.trainer!;
  const sources = readdirSync(join(repositoryRoot, 'trainers/python/dreamgym_trainer'))
    .filter((file) => file.endsWith('.py'))
    .map((file) => `package/trainer/dreamgym_trainer/${file}`);
  expect(trainer.tarballFiles.sort()).toEqual(
    [...sources, 'package/trainer/requirements.txt'].sort(),
  );
  expect(trainer.installedWorker).toBe(true);
  expect(trainer.health).toMatchObject({ ok: true, started: false });
  expect(trainer.startError).toMatch(
    /Trainer worker start failed \(python-module\): No module named 'torch'/,
  );
  expect(trainer.startError).toMatch(/npx @dreamgym\/cli doctor --fix --only trainer/);
  expect(trainer.startError).not.toMatch(/scripts\/|trainers\/python/);
  expect(trainer.doctorMissing).toMatch(
    /^trainer +MISSING +no virtualenv at \S+\/consumers\/llama\/\.venv/m,
  );
  expect(trainer.doctorMissing).toMatch(
    /^ +fix +\S+\/\.venv\/bin\/python -m pip install .* -r \S+\/consumers\/llama\/node_modules\/@dreamgym\/llama\/trainer\/requirements\.txt$/m,
  );
  expect(trainer.doctorOk).toMatch(
    /^trainer +ok +\S+ has the torch trainer's requirements for \S+\/consumers\/llama\/node_modules\/@dreamgym\/llama\/trainer\/dreamgym_trainer$/m,
  );
  // The upgrade to the new minor: the adapter and its peer core move together.
  expect(upgrade.before).toEqual({ '@dreamgym/alfworld': '0.1.0', '@dreamgym/core': '0.1.0' });
  expect(upgrade.after).toEqual({ '@dreamgym/alfworld': '0.2.0', '@dreamgym/core': '0.2.0' });
  expect(upgrade.exampleOutput).toBe(byName['@dreamgym/alfworld']!.exampleOutput);
}, 1_200_000);
