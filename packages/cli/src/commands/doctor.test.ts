/**
 * `dreamgym doctor` on this machine (set up by scripts/setup.sh: everything present), on
 * things that are missing (each with its fix command), and `--fix` compiling a faiss-node
 * that has no addon against Debian's libfaiss in a project folder outside the repository.
 */

import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
import { captureIo } from '../cli.test-support.js';
import { doctorCommand } from './doctor.js';

const repositoryRoot = resolve(import.meta.dirname, '../../../..');

const capture = (cwd: string) => captureIo({ env: { ...process.env }, cwd });

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'dreamgym-doctor-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('dreamgym doctor', () => {
  it('finds everything the set-up installs in this repository, each with its check command', async () => {
    const io = capture(repositoryRoot);
    const code = await doctorCommand.run([], io);
    const out = io.out();
    expect(out, out).toMatch(
      /^faiss +ok +faiss-node \d+\.\d+\.\d+ loads \(with the DreamGym additions\)/m,
    );
    expect(out).toMatch(/^chromium +ok +Chromium \d+/m);
    expect(out).toMatch(/^python +ok +\S+\/\.venv imports the ALFWorld engine/m);
    expect(out).toMatch(/^model +ok +smollm2-135m-instruct at .+ \(sha256 verified\)/m);
    expect(out.match(/^ +check +\S/gm)).toHaveLength(4);
    expect(out).toMatch(/nothing missing\n$/);
    expect(code).toBe(0);
  }, 120_000);

  it('names what is missing and the exact command that sets it up', async () => {
    const io = capture(repositoryRoot);
    const emptyVenv = join(scratch, 'no-venv');
    const emptyModels = join(scratch, 'no-models');
    const code = await doctorCommand.run(
      [
        '--only',
        'python,model,chromium',
        '--venv',
        emptyVenv,
        '--model-dir',
        emptyModels,
        '--chromium',
        join(scratch, 'chromium'),
      ],
      io,
    );
    const out = io.out();
    expect(code).toBe(1);
    expect(out).toContain(`python   MISSING  no virtualenv at ${emptyVenv}`);
    expect(out).toContain(
      `check    ${emptyVenv}/bin/python -c 'import textworld, fast_downward, alfworld.agents.environment.alfred_tw_env'`,
    );
    expect(out).toMatch(/^model +MISSING +smollm2-135m-instruct is not in the model cache/m);
    expect(out).toContain(
      `fix      dreamgym model pull smollm2-135m-instruct --model-dir ${emptyModels}`,
    );
    expect(out).toMatch(/^chromium +MISSING +no Chromium at \S+\/chromium/m);
    expect(out).toMatch(/3 missing: `dreamgym doctor --fix` sets them up/);
    expect(out).not.toContain('faiss');
  }, 60_000);

  it('is a dreamgym command with its usage', async () => {
    const list = capture(repositoryRoot);
    expect(await runCli(['--help'], list)).toBe(0);
    expect(list.out()).toMatch(
      /^ {2}doctor +check \(and with --fix set up\) faiss-node, Chromium/m,
    );
    const usage = capture(repositoryRoot);
    expect(await runCli(['doctor', '--help'], usage)).toBe(0);
    expect(usage.out()).toMatch(/^ {2}--fix +set up what is missing, then check again$/m);
  });

  it('rejects an unknown check by name', async () => {
    const io = capture(repositoryRoot);
    await expect(doctorCommand.run(['--only', 'faiss,gpu'], io)).rejects.toThrow(
      /--only: unknown check "gpu"\. Checks: faiss, chromium, python, model\./,
    );
  });

  it('--fix compiles a faiss-node without its addon against the system libfaiss', async () => {
    // A project outside the repository holding faiss-node as npm leaves it when its install
    // script is not run: sources, no build/.
    const project = join(scratch, 'project');
    await mkdir(join(project, 'node_modules'), { recursive: true });
    await writeFile(join(project, 'package.json'), '{"name":"doctor-project","private":true}\n');
    await promisify(execFile)('bash', [
      '-c',
      `tar --exclude=build -C ${repositoryRoot}/node_modules -cf - faiss-node | tar -xf - -C ${project}/node_modules`,
    ]);
    for (const dependency of ['bindings', 'file-uri-to-path', 'node-addon-api']) {
      await symlink(
        join(repositoryRoot, 'node_modules', dependency),
        join(project, 'node_modules', dependency),
        'dir',
      );
    }
    const before = capture(project);
    expect(await doctorCommand.run(['--only', 'faiss'], before)).toBe(1);
    expect(before.out()).toMatch(
      /^faiss +MISSING +faiss-node \S+ at \S+ has no working addon \(Error: Could not locate the bindings file/m,
    );
    expect(before.out()).toMatch(
      /^ +fix +\(cd \S+\/node_modules\/\.cache\/dreamgym-faiss-node && \S+node \S+node-gyp\.js rebuild/m,
    );

    const fixing = capture(project);
    const code = await doctorCommand.run(['--only', 'faiss', '--fix'], fixing);
    expect(fixing.out(), fixing.err()).toMatch(
      /^faiss +ok +faiss-node \S+ loads \(stock build: slower inserts and searches\) from .*\/project\/node_modules\/faiss-node$/m,
    );
    expect(fixing.out()).toMatch(/^\$ \(cd .* rebuild --nodedir=\/usr --jobs=2\)$/m);
    expect(code).toBe(0);
  }, 240_000);
});
