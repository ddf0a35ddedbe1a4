/**
 * npm's prepack of @dreamgym/llama: the package ships the torch trainer its LLM policies learn
 * in (the Python package `dreamgym_trainer` and its pinned requirements.txt), whose source is
 * the repository's `trainers/python/`. Before packing (`npm pack`, `npm publish`, `changeset
 * publish`) it is copied into `trainer/` (one of the package's `files`; ignored by git). In the
 * repository the trainer runs from `trainers/python/` (the package looks there first), so the
 * copy is only what a tarball holds. A copy that already matches is left alone: packs that run
 * side by side never see it half-written.
 *
 * Usage: node scripts/pack-trainer.mjs   (from packages/llama)
 */
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDirectory = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const source = resolve(packageDirectory, '../../trainers/python');
const target = join(packageDirectory, 'trainer');

/** The shipped files under `root`: dreamgym_trainer's sources and requirements.txt. */
function shipped(root) {
  const files = ['requirements.txt'];
  const walk = (directory) => {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory() && entry.name !== '__pycache__') walk(path);
      else if (entry.isFile() && !entry.name.endsWith('.pyc')) files.push(relative(root, path));
    }
  };
  walk(join(root, 'dreamgym_trainer'));
  return files.sort();
}

if (!existsSync(join(source, 'dreamgym_trainer', 'worker.py'))) {
  console.error(
    `pack-trainer: ${source}/dreamgym_trainer/worker.py is missing: @dreamgym/llama is packed from the DreamGym repository, whose trainers/python/ holds the trainer it ships.`,
  );
  process.exit(1);
}
const files = shipped(source);
const current =
  existsSync(join(target, 'dreamgym_trainer')) &&
  JSON.stringify(shipped(target)) === JSON.stringify(files) &&
  files.every((file) => readFileSync(join(source, file)).equals(readFileSync(join(target, file))));
if (!current) {
  const staging = `${target}.${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  for (const file of files) cpSync(join(source, file), join(staging, file), { recursive: true });
  rmSync(target, { recursive: true, force: true });
  renameSync(staging, target);
}
