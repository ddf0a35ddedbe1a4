/**
 * `dreamgym data import`: captured traces of a deployed agent (the JSONL records of
 * `@dreamgym/agents`' `ModelCallCapture`, with optional outcome lines) written as offline
 * `Trajectory` JSONL, the format `dreamgym buffer build --offline` and `train --offline` read.
 * `@dreamgym/agents` is loaded on demand.
 */
import { resolve } from 'node:path';
import { type Trajectory, TrajectorySchema, writeJsonl } from '@dreamgym/core';
import { type Command, type CommandIo, fail, parseFlags } from '../command-arguments.js';

const IMPORT_USAGE = `Usage: dreamgym data import --trace FILE --domain NAME --out FILE [options]

Turns captured model calls of an agent (JSONL lines of @dreamgym/agents' ModelCall, as the
capture's onCall writes them, and outcome lines {"episodeId", "reward", "success"}) into
offline trajectories: one per episode (or per conversation, for calls outside episodes), one
step per call of the environment's tool. Episodes without an outcome line get reward 0; a last
step whose result no later call carried (and no outcome line's finalObservation) has no next
state, and the replay buffer leaves it out.

  --trace FILE      a captured trace (repeatable)
  --domain NAME     the domain of the trajectories' tasks (the adapter's name)
  --out FILE        where the trajectories go (JSONL, replaced)
  --tool NAME       the tool whose calls are actions (default act)
  --argument NAME   the argument holding the action (default action)`;

/** The part of `@dreamgym/agents` this command uses. */
interface AgentsModule {
  importTraces(
    files: readonly string[],
    options: { domain: string; tool?: string; argument?: string },
  ): Promise<{
    trajectories: Trajectory[];
    calls: number;
    withoutActions: number;
    withoutFinalObservation: number;
  }>;
}

async function loadAgents(): Promise<AgentsModule> {
  const specifier: string = '@dreamgym/agents';
  try {
    return (await import(specifier)) as AgentsModule;
  } catch (error) {
    fail(
      `Importing traces needs the package @dreamgym/agents, which could not be loaded (${(error as Error).message.split('\n')[0]}). Install it next to the CLI: npm install @dreamgym/agents.`,
    );
  }
}

async function importCommand(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      trace: { type: 'string', multiple: true },
      domain: { type: 'string' },
      out: { type: 'string' },
      tool: { type: 'string' },
      argument: { type: 'string' },
    },
    IMPORT_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${IMPORT_USAGE}\n`);
    return 0;
  }
  const traces = ((values.trace as string[] | undefined) ?? []).map((file) =>
    resolve(io.cwd, file),
  );
  if (traces.length === 0) fail(`--trace FILE is required.\n\n${IMPORT_USAGE}`, '--trace');
  const domain = values.domain as string | undefined;
  if (!domain) fail(`--domain NAME is required.\n\n${IMPORT_USAGE}`, '--domain');
  const out = values.out as string | undefined;
  if (!out) fail(`--out FILE is required.\n\n${IMPORT_USAGE}`, '--out');
  const agents = await loadAgents();
  const imported = await agents.importTraces(traces, {
    domain,
    ...(typeof values.tool === 'string' ? { tool: values.tool } : {}),
    ...(typeof values.argument === 'string' ? { argument: values.argument } : {}),
  });
  if (imported.trajectories.length === 0) {
    fail(
      `No trajectories: the ${imported.calls} calls in ${traces.join(', ')} hold no call of the tool "${(values.tool as string | undefined) ?? 'act'}" (name it with --tool).`,
      '--tool',
    );
  }
  const output = resolve(io.cwd, out);
  await writeJsonl(output, TrajectorySchema, imported.trajectories);
  const steps = imported.trajectories.reduce((sum, trajectory) => sum + trajectory.steps.length, 0);
  io.stdout.write(
    `${JSON.stringify({
      output,
      calls: imported.calls,
      trajectories: imported.trajectories.length,
      steps,
      successes: imported.trajectories.filter((trajectory) => trajectory.success).length,
      withoutOutcome: imported.trajectories.filter(
        (trajectory) => trajectory.meta?.outcome === 'unknown',
      ).length,
      withoutActions: imported.withoutActions,
      withoutFinalObservation: imported.withoutFinalObservation,
    })}\n`,
  );
  return 0;
}

/** `dreamgym data import`. */
export const dataImportCommand: Command = {
  name: ['data', 'import'],
  summary: "turn a deployed agent's captured model calls into offline trajectory data",
  run: importCommand,
};
