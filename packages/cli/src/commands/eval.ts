/**
 * `dreamgym eval`: success of a run's latest checkpoint on the real or synthetic environment.
 * The synthetic environment is the run's own: the experience model and embedder its
 * `run.json` names, retrieving from the offline transitions and the experience the run
 * added up to that checkpoint.
 */
import { SeededRandom } from '@dreamgym/core';
import {
  type Command,
  type CommandIo,
  fail,
  integer,
  parseFlags,
  percent,
} from '../command-arguments.js';
import { evaluateOnDomain } from '../domain-evaluation.js';
import { runDirectoryFlag, withRunCheckpoint } from '../run-checkpoint.js';
import { setupFlagSpecs } from '../run-flags.js';
import { RUN_MODEL_OVERRIDE_FLAGS } from '../run-models.js';

const EVAL_USAGE = `Usage: dreamgym eval --run-dir DIR [options]

  --run-dir DIR              a \`dreamgym train\` run folder (its latest checkpoint is evaluated)
  --environment real|synthetic   where to evaluate (default real)
  --eval-split NAME  --eval-tasks N  --episodes N  --max-steps N  --seed N
  --sample                   sample actions instead of taking the most likely one

The synthetic environment uses the models the run was trained with (its run.json) and
retrieves from the experience the run added to its replay buffer up to the checkpoint.
Where its model servers or local model run now may differ from training:
  --base-url URL  --embedding-base-url URL  --model-concurrency N  --model-threads N`;

async function evaluate(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      'run-dir': { type: 'string' },
      environment: { type: 'string' },
      ...setupFlagSpecs(['eval-split', 'eval-tasks']),
      episodes: { type: 'string' },
      'max-steps': { type: 'string' },
      seed: { type: 'string' },
      sample: { type: 'boolean' },
      ...RUN_MODEL_OVERRIDE_FLAGS,
    },
    EVAL_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${EVAL_USAGE}\n`);
    return 0;
  }
  const runDirectory = runDirectoryFlag(values, io, EVAL_USAGE);
  const chosen = (values.environment as string | undefined) ?? 'real';
  if (chosen !== 'real' && chosen !== 'synthetic') {
    fail(`--environment must be real or synthetic, got "${chosen}".`, '--environment');
  }
  const environment: 'real' | 'synthetic' = chosen;
  // The synthetic environment is built from the run's models; the real one needs none.
  const overridden = Object.keys(RUN_MODEL_OVERRIDE_FLAGS).find(
    (flag) => values[flag] !== undefined,
  );
  if (environment === 'real' && overridden !== undefined) {
    fail(
      `--${overridden} is a setting of the synthetic environment's models; --environment real uses none.`,
      `--${overridden}`,
    );
  }
  return withRunCheckpoint(
    runDirectory,
    values,
    io,
    { models: environment === 'synthetic' },
    async ({ config, domain, policy, checkpoint, models, log }) => {
      const maxSteps =
        integer(values['max-steps'] as string | undefined, '--max-steps') ?? config.maxSteps;
      log(
        `evaluating checkpoint ${checkpoint} on ${domain.evaluationTasks.length} tasks (${environment})...`,
      );
      const metrics = await evaluateOnDomain(domain, {
        policy,
        ...(models ? { experienceModel: models.experienceModel } : {}),
        environment,
        progress: { label: 'dreamgym eval', output: io.stderr },
        tasks: domain.evaluationTasks,
        episodesPerTask: integer(values.episodes as string | undefined, '--episodes') ?? 1,
        maxSteps,
        config,
        greedy: values.sample !== true,
        concurrency: environment === 'real' ? config.realConcurrency : config.concurrency,
        random: new SeededRandom(
          integer(values.seed as string | undefined, '--seed') ?? config.seed,
        ),
      });
      io.stdout.write(`success (${metrics.mode}): ${percent(metrics)}\n`);
      io.stdout.write(`${JSON.stringify(metrics)}\n`);
      return 0;
    },
  );
}

/** `dreamgym eval`. */
export const evalCommand: Command = {
  name: ['eval'],
  summary: "evaluate a run's policy on the real or synthetic environment",
  run: evaluate,
};
