/**
 * `dreamgym doctor` on this machine (set up by scripts/setup.sh: everything present), on
 * things that are missing (each with its fix command), and `--fix` in a checkout running the
 * set-up script's step. Outside a checkout, the faiss fix (the real npm, the real compile) is
 * `tests/doctor-faiss.test.ts`.
 */

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
      /^faiss +ok +faiss-node \d+\.\d+\.\d+ loads \(with the DreamGym additions, (avx2|generic) distance kernels\)/m,
    );
    // Where the CPU has them, the set-up compiles faiss' distance kernels for AVX2.
    const flags = readFileSync('/proc/cpuinfo', 'utf8');
    const avx2 = ['avx2', 'fma', 'f16c'].every((flag) => new RegExp(`\\b${flag}\\b`).test(flags));
    expect(out).toContain(`${avx2 ? 'avx2' : 'generic'} distance kernels`);
    expect(out).toMatch(/^chromium +ok +Chromium \d+/m);
    expect(out).toMatch(/^python +ok +\S+\/\.venv imports the ALFWorld engine/m);
    expect(out).toMatch(
      /^miniwob +ok +\S+\/\.venv has the MiniWoB\+\+ task pages of the PyPI package miniwob: \S+\/miniwob\/html$/m,
    );
    expect(out).toMatch(
      /^trainer +ok +\S+\/\.venv has the torch trainer's requirements for \S+\/trainers\/python\/dreamgym_trainer$/m,
    );
    expect(out).toMatch(/^model +ok +smollm2-135m-instruct at .+ \(sha256 verified\)/m);
    expect(out.match(/^ +check +\S/gm)).toHaveLength(6);
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
      /--only: unknown check "gpu"\. Checks: faiss, chromium, python, miniwob, trainer, model\./,
    );
  });

  it('--fix makes a virtualenv with the MiniWoB++ pages from the requirements @dreamgym/miniwob ships (real venv, real pip)', async () => {
    const venv = join(scratch, 'miniwob-venv');
    const missing = capture(repositoryRoot);
    expect(await doctorCommand.run(['--only', 'miniwob', '--venv', venv], missing)).toBe(1);
    expect(missing.out()).toContain(`miniwob  MISSING  no virtualenv at ${venv}`);
    const requirements = join(repositoryRoot, 'adapters/miniwob/python/requirements.txt');
    expect(missing.out()).toMatch(new RegExp(`^ +fix +python3(\\.11)? -m venv ${venv}$`, 'm'));
    expect(missing.out()).toContain(
      `fix      ${venv}/bin/python -m pip install --disable-pip-version-check --no-deps --no-input -r ${requirements}\n`,
    );

    const fixing = capture(repositoryRoot);
    expect(await doctorCommand.run(['--only', 'miniwob', '--venv', venv, '--fix'], fixing)).toBe(0);
    expect(fixing.out()).toMatch(
      new RegExp(
        `^miniwob +ok +${venv} has the MiniWoB\\+\\+ task pages of the PyPI package miniwob: ${venv}/lib/python3\\.\\d+/site-packages/miniwob/html$`,
        'm',
      ),
    );
    // The pin the package ships, installed without the dependencies nothing here imports.
    const pin = /^miniwob==(\S+)$/m.exec(await readFile(requirements, 'utf8'))![1];
    const freeze = await new Promise<string>((done, failed) =>
      execFile(`${venv}/bin/python`, ['-m', 'pip', 'freeze'], (error, stdout) =>
        error ? failed(error) : done(stdout),
      ),
    );
    expect(freeze.trim().split('\n')).toEqual([`miniwob==${pin}`]);
  }, 300_000);

  it("in a DreamGym checkout, --fix runs the set-up script's step for what is missing", async () => {
    // A checkout whose set-up script records its arguments and makes a virtualenv that imports.
    const checkout = join(scratch, 'checkout');
    await mkdir(join(checkout, 'scripts/setup.d'), { recursive: true });
    await writeFile(join(checkout, 'package.json'), '{"name":"dreamgym","private":true}\n');
    await writeFile(join(checkout, 'scripts/setup.d/20-faiss.sh'), '');
    await writeFile(
      join(checkout, 'scripts/setup.sh'),
      '#!/usr/bin/env bash\ncd "$(dirname "$0")/.."\necho "$@" > setup-arguments\nmkdir -p .venv/bin\nprintf \'#!/bin/sh\\n\' > .venv/bin/python\nchmod +x .venv/bin/python\n',
    );
    const before = capture(checkout);
    expect(await doctorCommand.run(['--only', 'python'], before)).toBe(1);
    expect(before.out()).toMatch(/^ +fix +bash scripts\/setup\.sh python$/m);

    const fixing = capture(checkout);
    expect(await doctorCommand.run(['--only', 'python', '--fix'], fixing)).toBe(0);
    expect(fixing.out()).toContain('$ bash scripts/setup.sh python\n');
    expect(await readFile(join(checkout, 'setup-arguments'), 'utf8')).toBe('python\n');
    expect(fixing.out()).toMatch(/^python +ok +\S+\/checkout\/\.venv imports the ALFWorld engine/m);
  });
});
