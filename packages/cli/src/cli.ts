/**
 * The `dreamgym` command: a registry of commands, one module each under `commands/`, and the
 * dispatcher that picks one from the leading words of the arguments.
 */
import { DreamGymError } from '@dreamgym/core';
import { type Command, type CommandIo, fail } from './command-arguments.js';
import { annotateCommand } from './commands/annotate.js';
import { bufferCommand } from './commands/buffer.js';
import { dataExpertCommand } from './commands/data-expert.js';
import { dataExploreCommand } from './commands/data-explore.js';
import { dataImportCommand } from './commands/data-import.js';
import { dataRecordCommand } from './commands/data-record.js';
import { doctorCommand } from './commands/doctor.js';
import { evalCommand } from './commands/eval.js';
import { fidelityCommand } from './commands/fidelity.js';
import { modelPullCommand } from './commands/model-pull.js';
import { modelServeCommand } from './commands/model-serve.js';
import { newAdapterCommand } from './commands/new-adapter.js';
import { proxyCommand } from './commands/proxy.js';
import { reportCommand } from './commands/report.js';
import { serveCommand } from './commands/serve.js';
import { trainCommand } from './commands/train.js';

export type { Command, CommandIo } from './command-arguments.js';

/** Every command, in the order `dreamgym --help` lists them. */
export const COMMANDS: readonly Command[] = [
  trainCommand,
  evalCommand,
  fidelityCommand,
  reportCommand,
  dataExploreCommand,
  dataExpertCommand,
  dataRecordCommand,
  dataImportCommand,
  bufferCommand,
  modelPullCommand,
  modelServeCommand,
  annotateCommand,
  serveCommand,
  proxyCommand,
  newAdapterCommand,
  doctorCommand,
];

function usage(): string {
  const names = COMMANDS.map((command) => command.name.join(' '));
  const width = Math.max(...names.map((name) => name.length)) + 2;
  const lines = COMMANDS.map(
    (command, index) => `  ${names[index]!.padEnd(width)}${command.summary}`,
  );
  return `Usage: dreamgym <command> [options]\n\nCommands:\n${lines.join('\n')}\n\nRun \`dreamgym <command> --help\` for a command's options.`;
}

/** The command named by the leading words of `argv` (longest name first), and its arguments. */
function findCommand(argv: readonly string[]): { command: Command; args: string[] } | undefined {
  const byLength = [...COMMANDS].sort((a, b) => b.name.length - a.name.length);
  for (const command of byLength) {
    if (command.name.every((word, index) => argv[index] === word)) {
      return { command, args: argv.slice(command.name.length) };
    }
  }
  return undefined;
}

/** Runs the `dreamgym` command with `argv` (without node and the script); returns the exit code. */
export async function runCli(argv: readonly string[], io: CommandIo): Promise<number> {
  const [first] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    io.stdout.write(`${usage()}\n`);
    return first === undefined ? 1 : 0;
  }
  const found = findCommand(argv);
  try {
    if (!found) {
      const group = COMMANDS.filter(
        (command) => command.name.length > 1 && command.name[0] === first,
      );
      if (group.length > 0) {
        fail(
          `Unknown ${first} command "${argv[1] ?? ''}". Available: ${group.map((command) => command.name.join(' ')).join(', ')}.`,
        );
      }
      fail(`Unknown command "${first}".\n\n${usage()}`);
    }
    return await found.command.run(found.args, io);
  } catch (error) {
    if (DreamGymError.isInstance(error)) {
      const name = found ? found.command.name.join(' ') : first;
      io.stderr.write(`dreamgym ${name}: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}
