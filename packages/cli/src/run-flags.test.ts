/**
 * The flags as the CLI reads them over the config file: the loop's configuration, and the
 * domain's set-up (the part `run.json` keeps).
 */
import { DreamGymConfigSchema } from '@dreamgym/core';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type CommandIo, parseFlags } from './command-arguments.js';
import {
  domainSetupFromFlags,
  LOOP_FLAG_PATHS,
  loopConfigFromFlags,
  loopFlagSpecs,
  setupFlagSpecs,
} from './run-flags.js';

/** Flags as the commands read them: the loop's and the set-up's specs, values parsed. */
const flags = (...args: string[]) =>
  parseFlags(
    args,
    {
      domain: { type: 'string' },
      data: { type: 'string' },
      ...loopFlagSpecs(),
      ...setupFlagSpecs(['skip-invalid', 'target-recall', 'eval-tasks']),
    },
    'usage',
  );

const io: CommandIo = {
  stdout: { write: () => true },
  stderr: { write: () => true },
  env: {},
  cwd: '/work',
};

describe('domainSetupFromFlags', () => {
  it('reads --skip-invalid, and leaves it out when absent', () => {
    const lenient = domainSetupFromFlags(
      flags('--domain', 'webarena-lite', '--data', 'data/webarena-lite', '--skip-invalid'),
      {},
      io,
      'usage',
    );
    expect(lenient).toMatchObject({
      domain: 'webarena-lite',
      data: '/work/data/webarena-lite',
      skipInvalid: true,
    });
    const strict = domainSetupFromFlags(flags('--domain', 'alfworld', '--data', 'd'), {}, io, 'u');
    expect(strict).not.toHaveProperty('skipInvalid');
  });

  it('reads --target-recall, and refuses one outside (0, 1] naming the flag', () => {
    const tuned = domainSetupFromFlags(
      flags('--domain', 'alfworld', '--data', 'd', '--target-recall', '0.9', '--eval-tasks', '7'),
      {},
      io,
      'usage',
    );
    expect(tuned).toMatchObject({ targetRecall: 0.9, evalTasks: 7 });
    // A bad value fails as the flags are read, before anything runs.
    for (const bad of ['1.5', '0', 'high'])
      expect(() => flags('--target-recall', bad)).toThrow(/--target-recall must be/);
    expect(() => flags('--eval-tasks', 'many')).toThrow(/--eval-tasks must be an integer/);
  });
});

describe('loopConfigFromFlags', () => {
  const file = {
    iterations: 12,
    warmStart: { behaviourCloning: { maxTrajectories: 40, epochs: 3 } },
    evaluation: { every: 4, gapTasks: 20 },
  };

  it("sets one field per flag and keeps the rest of the file's objects", () => {
    const config = loopConfigFromFlags(
      flags(
        '--warm-start',
        'bc',
        '--eval-env',
        'both',
        '--iterations',
        '3',
        '--keep-best-on-real',
        '20',
      ),
      file,
    );
    expect(config).toEqual({
      iterations: 3,
      selection: { realTasks: 20 },
      warmStart: { behaviourCloning: { maxTrajectories: 40, epochs: 3 } },
      evaluation: { every: 4, gapTasks: 20, environments: ['synthetic', 'real'] },
    });
    // The file's object is left as it was.
    expect(file.evaluation).toEqual({ every: 4, gapTasks: 20 });
  });

  it('switches cloning on with defaults, or off, with --warm-start', () => {
    expect(loopConfigFromFlags(flags('--warm-start', 'bc'), {})).toEqual({
      warmStart: { behaviourCloning: {} },
    });
    expect(loopConfigFromFlags(flags('--warm-start', 'none'), file).warmStart).toEqual({});
    expect(() => loopConfigFromFlags(flags('--warm-start', 'dagger'), file)).toThrow(
      /--warm-start must be bc or none, got "dagger"/,
    );
  });
});

describe('the loop flags', () => {
  /** The zod schema at `path` in the loop's configuration schema, or undefined. */
  function schemaAt(path: readonly string[]): z.ZodType | undefined {
    let node: z.ZodType = DreamGymConfigSchema;
    for (const key of path) {
      while (node instanceof z.ZodDefault || node instanceof z.ZodOptional)
        node = node.unwrap() as z.ZodType;
      if (!(node instanceof z.ZodObject)) return undefined;
      node = (node.shape as Record<string, z.ZodType>)[key]!;
      if (node === undefined) return undefined;
    }
    return node;
  }

  it("each set a field of the loop's configuration schema, with a value it accepts", () => {
    for (const [name, path] of LOOP_FLAG_PATHS) {
      const field = schemaAt(path);
      expect(field, `--${name} sets ${path.join('.')}, which the schema lacks`).toBeDefined();
      const given = loopConfigFromFlags(
        loopFlagSpecs([name])[name]!.type === 'boolean'
          ? flags(`--${name}`)
          : flags(`--${name}`, sample(name)),
        {},
      );
      // The configuration a flag gives parses, and holds what the flag set.
      expect(() => DreamGymConfigSchema.parse(given), `--${name}`).not.toThrow();
    }
    expect(() => loopFlagSpecs(['no-such-flag'])).toThrow(/--no-such-flag is not a loop flag/);
  });
});

/** A valid text for a loop value flag. */
function sample(name: string): string {
  const texts: Record<string, string> = {
    algorithm: 'ppo',
    credit: 'fork',
    lambda: '0.3',
    'eval-env': 'both',
    'eval-mode': 'both',
    'warm-start': 'bc',
  };
  return texts[name] ?? '2';
}
