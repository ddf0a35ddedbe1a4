/**
 * The full release check on a real registry (minutes; the suite runs a quick variant,
 * tests/release-registry.test.ts): every public package built from source in a scratch copy,
 * versioned and published with changesets to Verdaccio on 127.0.0.1; then, per adapter, a
 * fresh consumer outside the workspace installs it alone and runs its README example (MiniWoB++
 * after the `doctor --fix` its error names); @dreamgym/llama alone with its torch trainer; the
 * core README quick start runs in another consumer after `dreamgym doctor --fix --only faiss`;
 * a second release (a core minor) bumps the fixed group and the first consumer upgrades.
 *
 * Usage: npx tsx scripts/release-registry.ts [--ref REF] [--no-build] [--keep] [--out DIR]
 *   --ref REF    release the repository at a git ref (default: the working tree)
 *   --no-build   reuse each package's dist/ instead of building in the copy
 *   --keep       keep the scratch folder (registry storage, copy, consumers)
 *   --out DIR    write transcript.txt (the consumer-side commands and their output) and result.json
 * Needs DREAMGYM_DATA_DIR (the adapters' examples read their data from it).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { formatTranscript, runReleaseCheck } from '../tests/release-registry.js';
import { publicPackages, repositoryRoot } from '../tests/workspace.js';

const { values } = parseArgs({
  options: {
    ref: { type: 'string' },
    'no-build': { type: 'boolean' },
    keep: { type: 'boolean' },
    out: { type: 'string' },
  },
});
const dataDir = process.env.DREAMGYM_DATA_DIR;
if (!dataDir) {
  console.error(
    'DREAMGYM_DATA_DIR is not set: the adapters’ README examples read their data from it.',
  );
  process.exit(2);
}
const adapters = publicPackages()
  .filter((pkg) => pkg.directory.startsWith(join(repositoryRoot, 'adapters')))
  .map((pkg) => pkg.name)
  .sort((a, b) =>
    a === '@dreamgym/alfworld' ? -1 : b === '@dreamgym/alfworld' ? 1 : a.localeCompare(b),
  );

const result = await runReleaseCheck({
  build: !values['no-build'],
  ...(values.ref ? { ref: values.ref } : {}),
  consumers: adapters,
  // The MiniWoB++ pages come from the PyPI package miniwob: the example first fails saying how
  // to set it up from the installed package, then runs after that `doctor --fix`.
  runtimeMissing: ['@dreamgym/miniwob'],
  runtimeFix: {
    '@dreamgym/miniwob': [['npx', '@dreamgym/cli', 'doctor', '--fix', '--only', 'miniwob']],
  },
  // @dreamgym/llama alone with the torch trainer it ships (the project's .venv has its
  // requirements; torch is not downloaded again).
  llamaTrainer: { venv: join(repositoryRoot, '.venv') },
  quickStart: true,
  exampleEnv: { DREAMGYM_DATA_DIR: dataDir },
  keep: values.keep === true,
  log: (line) => console.error(line),
});
const consumerSide = formatTranscript(result.transcript, (entry) =>
  entry.cwd.includes('/consumers/'),
);
console.log(consumerSide);
console.log(`first release:  ${JSON.stringify(result.first.versions)}`);
console.log(`second release: ${JSON.stringify(result.second.versions)}`);
for (const consumer of result.consumers) {
  console.log(
    `${consumer.package}: installed alone in ${consumer.installSeconds.toFixed(1)} s (${JSON.stringify(consumer.installed)}); README example ran${consumer.fixOutput ? ' after the doctor --fix its error names' : ''}`,
  );
}
if (result.trainer) {
  console.log(
    `@dreamgym/llama: ${result.trainer.tarballFiles.length} trainer files in the tarball; the installed package started its worker (health ${JSON.stringify(result.trainer.health.ok)})`,
  );
}
if (result.quickStart) {
  console.log(
    `core quick start: real success ${result.quickStart.before}% before, ${result.quickStart.after}% after`,
  );
}
console.log(
  `upgrade of ${result.upgrade.package}: ${JSON.stringify(result.upgrade.before)} -> ${JSON.stringify(result.upgrade.after)}`,
);
console.log(
  `release check passed in ${result.seconds.toFixed(0)} s${values.keep ? ` (scratch kept: ${result.scratch})` : ''}`,
);
if (values.out) {
  const out = resolve(values.out);
  await mkdir(out, { recursive: true });
  await writeFile(join(out, 'transcript.txt'), formatTranscript(result.transcript));
  await writeFile(
    join(out, 'result.json'),
    `${JSON.stringify({ ...result, transcript: undefined }, null, 2)}\n`,
  );
}
