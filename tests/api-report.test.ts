/**
 * The public API of every published package is recorded in `api/<package>.api.md`
 * (`scripts/api-report.ts`): the built surface must match the checked-in report, and a
 * report that changed since the base commit needs a changeset naming its package.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ApiSurface,
  baseCommit,
  checkChangesets,
  checkSurfaces,
  describeDifferences,
  parseReport,
  readSurface,
  renderReport,
  reportedPackages,
  WRITE_COMMAND,
} from '../scripts/api-report.js';

describe('API reports', () => {
  it('cover every public package and entry point', () => {
    const entries = reportedPackages().flatMap((pkg) => [...pkg.entryPoints.keys()]);
    expect(entries).toContain('@dreamgym/core');
    expect(entries).toContain('@dreamgym/core/testing');
    expect(entries).toContain('@dreamgym/core/internal');
  });

  it('match the built public surface of each package', () => {
    const failures = checkSurfaces()
      .filter(({ differences }) => differences.length > 0)
      .map(
        ({ pkg, file, differences }) =>
          `${pkg.name}: the built public API differs from ${file}:\n  ${differences.join('\n  ')}`,
      );
    expect(
      failures,
      `${failures.join('\n')}\nRun \`${WRITE_COMMAND}\`, review the diff, and add a changeset (npx changeset) naming the package.`,
    ).toEqual([]);
  });

  it('that changed since the base commit come with a changeset naming the package', () => {
    const base = baseCommit();
    const missing = checkChangesets(undefined, base)
      .filter(({ changed, changesets }) => changed && changesets.length === 0)
      .map(
        ({ pkg, file }) => `${file} changed since ${base} but no .changeset/*.md names ${pkg.name}`,
      );
    expect(missing, `${missing.join('\n')}\nAdd one with \`npx changeset\`.`).toEqual([]);
  });

  it('keep internals out of the root entry of @dreamgym/core', () => {
    const core = reportedPackages().find((pkg) => pkg.name === '@dreamgym/core')!;
    const surface = readSurface(core);
    const root = surface.get('@dreamgym/core')!;
    const internal = surface.get('@dreamgym/core/internal')!;
    for (const name of ['Semaphore', 'extractJson', 'writeFileAtomic']) {
      expect(root.has(name), `${name} is exported from the root entry`).toBe(false);
      expect(internal.has(name), `${name} is missing from @dreamgym/core/internal`).toBe(true);
    }
    expect(root.get('DreamGymLoop')).toBe('class');
    expect(root.get('TaskSchema')).toBe('const');
    expect(root.get('Task')).toBe('type');
    expect(root.get('parseOptions')).toBe('function');
  });

  it('keep @dreamgym/core/internal to a handful of helpers (at most 8 names)', () => {
    const core = reportedPackages().find((pkg) => pkg.name === '@dreamgym/core')!;
    const internal = readSurface(core).get('@dreamgym/core/internal')!;
    expect(internal.size, [...internal.keys()].join(', ')).toBeLessThanOrEqual(8);
    // The OpenAI wire format is a package of its own, which core does not use.
    expect(internal.has('OpenAIHttpError')).toBe(false);
  });

  it('keep the root entry of @dreamgym/core to what a run is made of (at most 80 names)', () => {
    const core = reportedPackages().find((pkg) => pkg.name === '@dreamgym/core')!;
    const surface = readSurface(core);
    const root = surface.get('@dreamgym/core')!;
    expect(root.size, [...root.keys()].join(', ')).toBeLessThanOrEqual(80);
    // The rest lives in the entry named after its folder.
    expect(surface.get('@dreamgym/core/training')!.get('CheckpointStore')).toBe('class');
    expect(surface.get('@dreamgym/core/models')!.get('OpenAICompatibleChatModel')).toBe('class');
    expect(root.has('CheckpointStore')).toBe(false);
  });
});

describe('the report format', () => {
  const surface: ApiSurface = new Map([
    [
      '@scope/pkg',
      new Map([
        ['Thing', 'class'],
        ['make', 'function'],
      ]),
    ],
  ]);
  const pkg = { name: '@scope/pkg', directory: '/x/pkg', entryPoints: new Map() };

  it('reads back what it writes', () => {
    expect(parseReport(renderReport(pkg, surface))).toEqual(surface);
  });

  it('names added, removed and changed exports', () => {
    const built: ApiSurface = new Map([
      [
        '@scope/pkg',
        new Map([
          ['Thing', 'interface'],
          ['other', 'const'],
        ]),
      ],
      ['@scope/pkg/extra', new Map([['x', 'const']])],
    ]);
    expect(describeDifferences(surface, built)).toEqual([
      '@scope/pkg: added other',
      '@scope/pkg: removed make',
      '@scope/pkg: Thing changed from class to interface',
      'new entry point @scope/pkg/extra (1 exports)',
    ]);
    expect(describeDifferences(surface, surface)).toEqual([]);
  });
});

describe('the changeset rule, on a scratch repository', () => {
  const root = mkdtempSync(join(tmpdir(), 'dreamgym-api-report-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: root,
      encoding: 'utf8',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@example.com',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@example.com',
      },
    });

  it('asks for a changeset only when a report changed, and finds one that names the package', () => {
    mkdirSync(join(root, 'packages', 'thing'), { recursive: true });
    mkdirSync(join(root, 'api'));
    mkdirSync(join(root, '.changeset'));
    writeFileSync(
      join(root, 'packages', 'thing', 'package.json'),
      JSON.stringify({ name: '@scope/thing', exports: { '.': { types: './dist/index.d.ts' } } }),
    );
    writeFileSync(join(root, 'api', 'thing.api.md'), '## `@scope/thing`\n');
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-q', '-m', 'first');

    const check = () => checkChangesets(root, 'HEAD')[0]!;
    expect(check()).toMatchObject({ changed: false, changesets: [] });

    writeFileSync(join(root, 'api', 'thing.api.md'), '## `@scope/thing`\n\n| `x` | const |\n');
    expect(check()).toMatchObject({ changed: true, changesets: [] });

    writeFileSync(
      join(root, '.changeset', 'other.md'),
      "---\n'@scope/another': patch\n---\n\nNot this one.\n",
    );
    expect(check().changesets).toEqual([]);
    writeFileSync(
      join(root, '.changeset', 'thing-x.md'),
      '---\n"@scope/thing": minor\n---\n\nAdds `x`.\n',
    );
    expect(check()).toMatchObject({ changed: true, changesets: ['.changeset/thing-x.md'] });
  });
});
