/**
 * `dreamgym data explore`: exploration episodes on a domain's real environment, saved as
 * offline trajectories.
 */
import { resolve } from 'node:path';
import {
  type Command,
  type CommandIo,
  decimal,
  defaultDataDirectory,
  fail,
  integer,
  parseFlags,
} from '../command-arguments.js';

const EXPLORE_USAGE = `Usage: dreamgym data explore --domain NAME --out FILE [options]

  --data DIR  --episodes N  --epsilon X  --random-share X  --seed N  --max-steps N  --append`;

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
  const exportName = `explore${domain[0]!.toUpperCase()}${domain.slice(1)}`;
  const module = (await import(`@dreamgym/${domain}`).catch(() =>
    fail(`Unknown domain "${domain}": @dreamgym/${domain} is not installed.`, '--domain'),
  )) as Record<string, unknown>;
  const explore = module[exportName];
  if (typeof explore !== 'function')
    fail(`@dreamgym/${domain} has no exploration (${exportName}).`, '--domain');
  const summary = await (
    explore as (options: Record<string, unknown>) => Promise<Record<string, unknown>>
  )({
    output: resolve(io.cwd, values.out as string),
    dataDir: resolve(io.cwd, data),
    append: values.append === true,
    ...(values.episodes ? { episodes: integer(values.episodes as string, '--episodes') } : {}),
    ...(values.epsilon ? { epsilon: decimal(values.epsilon as string, '--epsilon') } : {}),
    ...(values['random-share']
      ? { randomShare: decimal(values['random-share'] as string, '--random-share') }
      : {}),
    ...(values.seed ? { seed: integer(values.seed as string, '--seed') } : {}),
    ...(values['max-steps']
      ? { maxSteps: integer(values['max-steps'] as string, '--max-steps') }
      : {}),
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
