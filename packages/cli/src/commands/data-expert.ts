/**
 * `dreamgym data expert`: expert demonstrations generated from a domain's game files with
 * its real engine (for ALFWorld: `expert_trajectories.jsonl`, which the public game-file
 * download does not include).
 */
import { join, resolve } from 'node:path';
import { loadDomainAdapter } from '@dreamgym/run';
import { type Command, type CommandIo, fail, integer, parseFlags } from '../command-arguments.js';
import { defaultDataDirectory } from '../run-flags.js';

const EXPERT_USAGE = `Usage: dreamgym data expert --domain NAME [options]

  --data DIR          game files (default $DREAMGYM_DATA_DIR/<domain>)
  --out FILE          JSONL to append to (default <data>/expert_trajectories.jsonl);
                      games already in it are skipped, so a stopped run resumes
  --games N           only the first N games of the split
  --game PATH         a game to play (<split>/<task>/<trial>); repeat for several
  --split NAME        train (default) or valid_seen
  --expert NAME       handcoded (default: ALFWorld's expert demonstrations) or planner
  --seed N            seed of the expert's random choices (default 0)
  --max-steps N       commands per game before it counts as unsolved (default 150)`;

async function expert(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      domain: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      games: { type: 'string' },
      game: { type: 'string', multiple: true },
      split: { type: 'string' },
      expert: { type: 'string' },
      seed: { type: 'string' },
      'max-steps': { type: 'string' },
    },
    EXPERT_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${EXPERT_USAGE}\n`);
    return 0;
  }
  const domain = values.domain as string | undefined;
  if (!domain) fail(`--domain is required.\n\n${EXPERT_USAGE}`, '--domain');
  const data = (values.data as string | undefined) ?? defaultDataDirectory(domain, io);
  if (!data) fail('--data DIR is required, or set DREAMGYM_DATA_DIR.', '--data');
  if (values.games !== undefined && values.game !== undefined)
    fail('Give either --games N or --game PATH, not both.', '--games');
  const limit = integer(values.games, '--games');
  if (limit !== undefined && limit < 1) fail('--games must be at least 1.', '--games');
  const dataDir = resolve(io.cwd, data);
  const out = resolve(
    io.cwd,
    (values.out as string | undefined) ?? join(dataDir, 'expert_trajectories.jsonl'),
  );
  const adapter = await loadDomainAdapter(domain, { dataDir });
  if (adapter.generateExpertTrajectories === undefined)
    fail(
      `The ${domain} adapter has no expert generation (DomainAdapter.generateExpertTrajectories).`,
      '--domain',
    );
  const seed = integer(values.seed, '--seed');
  const maxSteps = integer(values['max-steps'], '--max-steps');
  const summary = await adapter.generateExpertTrajectories({
    output: out,
    ...(values.split === undefined ? {} : { split: values.split as string }),
    ...(values.game === undefined ? {} : { games: values.game as string[] }),
    ...(limit === undefined ? {} : { limit }),
    // The adapter's own experts (ALFWorld's handcoded or planner): it refuses a setting it does not take.
    ...(values.expert === undefined ? {} : { settings: { expert: values.expert } }),
    ...(seed === undefined ? {} : { seed }),
    ...(maxSteps === undefined ? {} : { maxSteps }),
    onProgress: (progress) => {
      const detail =
        progress.status === 'skipped'
          ? 'already in the output'
          : `${progress.steps} commands, ${progress.seconds.toFixed(1)} s${progress.reason ? `: ${progress.reason}` : ''}`;
      io.stderr.write(
        `[${progress.index}/${progress.total}] ${progress.status} ${progress.game} (${detail})\n`,
      );
    },
  });
  io.stdout.write(`${JSON.stringify(summary)}\n`);
  if (summary.failed.length > 0) {
    io.stderr.write(
      `${summary.failed.length} game(s) were not solved by the expert and were not written (listed above).\n`,
    );
    return 1;
  }
  return 0;
}

/** `dreamgym data expert`. */
export const dataExpertCommand: Command = {
  name: ['data', 'expert'],
  summary: 'generate expert demonstrations from the game files with the real engine',
  run: expert,
};
