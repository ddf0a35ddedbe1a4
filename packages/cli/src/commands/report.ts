/**
 * `dreamgym report`: a self-contained HTML page comparing one or more runs.
 */
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { loadRun, renderReport } from '@dreamgym/run';
import { type Command, type CommandIo, fail, parseFlags } from '../command-arguments.js';

const REPORT_USAGE = `Usage: dreamgym report --run-dir DIR [--run-dir DIR ...] [--out FILE] [--title TEXT]

Writes a self-contained HTML page (default <first run-dir>/report.html) with success rate,
reward, task-pool and buffer growth per iteration, and a table comparing the runs.`;

async function report(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      'run-dir': { type: 'string', multiple: true },
      out: { type: 'string' },
      title: { type: 'string' },
    },
    REPORT_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${REPORT_USAGE}\n`);
    return 0;
  }
  const directories = (values['run-dir'] as string[] | undefined) ?? [];
  if (directories.length === 0) fail(`--run-dir is required.\n\n${REPORT_USAGE}`, '--run-dir');
  const runs = await Promise.all(
    directories.map((directory) => loadRun(resolve(io.cwd, directory))),
  );
  const out = resolve(
    io.cwd,
    (values.out as string | undefined) ?? join(directories[0]!, 'report.html'),
  );
  await writeFile(out, renderReport(runs, values.title ? { title: values.title as string } : {}));
  io.stdout.write(`report written to ${out}\n`);
  return 0;
}

/** `dreamgym report`. */
export const reportCommand: Command = {
  name: ['report'],
  summary: 'write an HTML report (plots, ablation table) of one or more runs',
  run: report,
};
