/**
 * Commands as `dreamgym doctor` runs them and prints them: the printed text is the exact
 * command, quoted for a POSIX shell, so a user can run it by hand.
 */
import { spawn } from 'node:child_process';

/** `argument` quoted for a POSIX shell where it needs it. */
export function quote(argument: string): string {
  return /^[\w@%+=:,./-]+$/.test(argument) ? argument : `'${argument.replaceAll("'", `'\\''`)}'`;
}

/** The command line of `argv` run in `cwd`, as typed from `from` (`(cd DIR && ...)` elsewhere). */
export function commandText(argv: readonly string[], cwd: string, from: string): string {
  const text = argv.map(quote).join(' ');
  return cwd === from ? text : `(cd ${quote(cwd)} && ${text})`;
}

/** Runs a command; its output goes to `onOutput` as it comes, and its last 64 kB are kept. */
export function execute(
  argv: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; onOutput?: (text: string) => void },
): Promise<{ code: number; output: string }> {
  return new Promise((resolvePromise) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      output = (output + text).slice(-64_000);
      options.onOutput?.(text);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (error) => resolvePromise({ code: 127, output: `${error.message}\n` }));
    child.on('close', (code) => resolvePromise({ code: code ?? 1, output }));
  });
}
