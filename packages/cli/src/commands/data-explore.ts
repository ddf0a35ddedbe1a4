/**
 * `dreamgym data explore`: exploration episodes on a domain's real environment, saved as
 * offline trajectories.
 */
import { resolve } from 'node:path';
import { loadDomainAdapter, reportEpisodes } from '@dreamgym/run';
import {
  type Command,
  type CommandIo,
  decimal,
  fail,
  integer,
  parseFlags,
} from '../command-arguments.js';
import { defaultDataDirectory } from '../run-flags.js';

const EXPLORE_USAGE = `Usage: dreamgym data explore --domain NAME --out FILE [options]

  --data DIR              data folder (default $DREAMGYM_DATA_DIR/<domain>)
  --episodes N            episodes to play (default 100)
  --random-share X        share of random episodes; the others are expert-based (default 0.5)
  --expert-policy NAME    perturbed (default): replayed expert commands with one perturbation
                          per episode; planner: epsilon-expert on the PDDL planner (slow)
  --perturbations LIST    perturbed-expert kinds, comma-separated (default skip,epsilon,prefix)
  --epsilon X             random-command probability of epsilon episodes (default 0.3)
  --seed N                seed of the policies and of the game order (default 0)
  --max-steps N           step limit; a cut episode ends with truncated (default 50)
  --concurrency N         episodes at once, one engine server each (default 1)
  --append                append to --out instead of replacing it`;

async function explore(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      domain: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      episodes: { type: 'string' },
      epsilon: { type: 'string' },
      'random-share': { type: 'string' },
      'expert-policy': { type: 'string' },
      perturbations: { type: 'string' },
      concurrency: { type: 'string' },
      seed: { type: 'string' },
      'max-steps': { type: 'string' },
      append: { type: 'boolean' },
    },
    EXPLORE_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${EXPLORE_USAGE}\n`);
    return 0;
  }
  const domain = values.domain as string | undefined;
  if (!domain) fail(`--domain is required.\n\n${EXPLORE_USAGE}`, '--domain');
  if (!values.out) fail(`--out FILE is required.\n\n${EXPLORE_USAGE}`, '--out');
  const data = (values.data as string | undefined) ?? defaultDataDirectory(domain, io);
  if (!data) fail(`--data DIR is required, or set DREAMGYM_DATA_DIR.`, '--data');
  const adapter = await loadDomainAdapter(domain, { dataDir: resolve(io.cwd, data) });
  if (adapter.explore === undefined)
    fail(`The ${domain} adapter has no exploration (DomainAdapter.explore).`, '--domain');
  const report = reportEpisodes('exploration', io.stderr);
  // The adapter's own policies' settings: it refuses one it does not take.
  const settings = {
    ...(values.epsilon ? { epsilon: decimal(values.epsilon as string, '--epsilon') } : {}),
    ...(values['expert-policy'] ? { expertPolicy: values['expert-policy'] } : {}),
    ...(values.perturbations
      ? {
          perturbations: (values.perturbations as string)
            .split(',')
            .map((kind) => kind.trim())
            .filter(Boolean),
        }
      : {}),
  };
  const summary = await adapter.explore({
    output: resolve(io.cwd, values.out as string),
    append: values.append === true,
    ...(values.episodes ? { episodes: integer(values.episodes as string, '--episodes') } : {}),
    ...(values['random-share']
      ? { randomShare: decimal(values['random-share'] as string, '--random-share') }
      : {}),
    ...(values.seed ? { seed: integer(values.seed as string, '--seed') } : {}),
    ...(values['max-steps']
      ? { maxSteps: integer(values['max-steps'] as string, '--max-steps') }
      : {}),
    ...(values.concurrency
      ? { concurrency: integer(values.concurrency as string, '--concurrency') }
      : {}),
    ...(Object.keys(settings).length > 0 ? { settings } : {}),
    onEpisode: (progress) => report(progress, { done: progress.completed, total: progress.total }),
  });
  io.stdout.write(`${JSON.stringify(summary)}\n`);
  return 0;
}

/** `dreamgym data explore`. */
export const dataExploreCommand: Command = {
  name: ['data', 'explore'],
  summary: 'play exploration episodes on the real environment and save them as offline data',
  run: explore,
};
