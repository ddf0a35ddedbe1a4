/**
 * The project virtualenv installs every component's pinned requirements file together with
 * `pip install --no-deps` (scripts/setup.d/30-python.sh): a package pinned twice must be
 * pinned to one version, or the install would depend on file order.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';
import { repositoryRoot } from './workspace.js';

function requirementFiles(): string[] {
  const files: string[] = [];
  for (const group of ['adapters', 'packages']) {
    for (const name of readdirSync(join(repositoryRoot, group))) {
      const file = join(repositoryRoot, group, name, 'python', 'requirements.txt');
      if (existsSync(file)) files.push(file);
    }
  }
  const trainer = join(repositoryRoot, 'trainers', 'python', 'requirements.txt');
  if (existsSync(trainer)) files.push(trainer);
  return files;
}

/** PEP 503 normalised name -> pinned version, from `name==version` lines. */
function pins(file: string): Map<string, { version: string; line: number }> {
  const result = new Map<string, { version: string; line: number }>();
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((raw, index) => {
      const line = raw.replace(/#.*/, '').trim();
      if (line === '') return;
      const match = /^([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)/.exec(line);
      if (!match) {
        throw new Error(
          `${relative(repositoryRoot, file)}:${index + 1}: "${line}" is not pinned as name==version.`,
        );
      }
      result.set(match[1]!.toLowerCase().replace(/[-_.]+/g, '-'), {
        version: match[2]!,
        line: index + 1,
      });
    });
  return result;
}

it('every Python requirements file pins each package exactly, and shared pins agree', () => {
  const files = requirementFiles();
  expect(files.length).toBeGreaterThan(0);
  const seen = new Map<string, { version: string; where: string }>();
  const conflicts: string[] = [];
  for (const file of files) {
    for (const [name, { version, line }] of pins(file)) {
      const where = `${relative(repositoryRoot, file)}:${line}`;
      const earlier = seen.get(name);
      if (earlier && earlier.version !== version) {
        conflicts.push(`${name}: ${earlier.version} (${earlier.where}) vs ${version} (${where})`);
      } else if (!earlier) {
        seen.set(name, { version, where });
      }
    }
  }
  expect(conflicts).toEqual([]);
});
