import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo, dataRoot } from '../cli.test-support.js';

const capture = () => captureIo({ env: { DREAMGYM_DATA_DIR: dataRoot() } });

const directories: string[] = [];
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true });
});

describe('dreamgym buffer', () => {
  it('builds a buffer from ALFWorld trajectories in one pass and reports its index and measured recall', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-buffer-cli-'));
    directories.push(directory);
    const out = join(directory, 'buffer');
    const io = capture();
    const code = await runCli(
      [
        'buffer',
        'build',
        '--domain',
        'alfworld',
        '--out',
        out,
        '--offline-limit',
        '400',
        '--index',
        'hnsw',
        '--target-recall',
        '0.9',
        '--threads',
        '2',
      ],
      io,
    );
    expect(code, io.err()).toBe(0);
    // Progress goes to stderr, the summary to stdout.
    expect(io.err()).toMatch(/dreamgym buffer build .*\d+\/\d+/);
    expect(io.out()).toMatch(/^built .* from 400 trajectories: [\d,]+ transitions added/);
    expect(io.out()).toMatch(
      /index {8}HNSW m 16, efConstruction 40, efSearch \d+, target recall 0\.9/,
    );
    expect(io.out()).toMatch(
      /recall {7}[01]\.\d{3} recall@8 \(target 0\.9, reached\) at efSearch \d+, m 16; 400 queries from new rows/,
    );

    const info = capture();
    expect(await runCli(['buffer', 'info', out, '--json'], info)).toBe(0);
    const stats = JSON.parse(info.out());
    expect(stats.index).toMatchObject({ type: 'hnsw', m: 16, targetRecall: 0.9 });
    expect(stats.recall).toMatchObject({ targetRecall: 0.9, reached: true, k: 8 });
    expect(stats.indexedRows).toBeLessThan(stats.size);
    expect(stats.occurrences).toBeGreaterThan(stats.size);

    // A second build into the same directory adds nothing new: every transition is stored.
    const again = capture();
    expect(
      await runCli(
        [
          'buffer',
          'build',
          '--domain',
          'alfworld',
          '--out',
          out,
          '--offline-limit',
          '400',
          '--json',
        ],
        again,
      ),
    ).toBe(0);
    expect(JSON.parse(again.out())).toMatchObject({
      added: 0,
      counted: 0,
      stats: { size: stats.size },
    });
  }, 180_000);

  it('builds a small buffer flat, and says what is wrong with bad input', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'dreamgym-buffer-cli-'));
    directories.push(directory);
    const io = capture();
    const out = join(directory, 'small');
    expect(
      await runCli(
        ['buffer', 'build', '--domain', 'alfworld', '--out', out, '--offline-limit', '20'],
        io,
      ),
    ).toBe(0);
    expect(io.out()).toMatch(/index {8}flat \(exact inner product\)/);
    expect(io.out()).toMatch(/recall {7}not measured/);

    const missing = capture();
    expect(await runCli(['buffer', 'info', join(directory, 'nothing-here')], missing)).toBe(2);
    expect(missing.err()).toMatch(
      /manifest\.json does not exist or is not JSON: no replay buffer in/,
    );
    const badRecall = capture();
    expect(
      await runCli(
        ['buffer', 'build', '--domain', 'alfworld', '--out', out, '--target-recall', '1.5'],
        badRecall,
      ),
    ).toBe(2);
    expect(badRecall.err()).toMatch(/--target-recall must be in \(0, 1\], got 1\.5/);
    const unknown = capture();
    expect(await runCli(['buffer', 'shrink'], unknown)).toBe(2);
    expect(unknown.err()).toMatch(/Unknown buffer command "shrink". Available: build, info/);
  }, 120_000);
});
