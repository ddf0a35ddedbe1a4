/**
 * What `dreamgym doctor` prints: a line per check (name, status, what it found), the exact
 * command the check ran, and for what is missing the fix, as commands; then a summary.
 */
import type { CommandIo } from '../command-arguments.js';
import type { Finding } from './checks.js';

const COLUMN = 9;

function line(io: CommandIo, name: string, label: string, text: string): void {
  io.stdout.write(`${name.padEnd(COLUMN)}${label.padEnd(COLUMN)}${text}\n`);
}

/** A check's finding, with its check command and, when missing, its fix. */
export function reportFinding(name: string, finding: Finding, io: CommandIo): void {
  const label = finding.status === 'ok' ? 'ok' : finding.status === 'missing' ? 'MISSING' : 'n/a';
  line(io, name, label, finding.detail);
  if (finding.check) line(io, '', 'check', finding.check);
  if (finding.status !== 'missing' || !finding.fix) return;
  if (finding.fix.manual) line(io, '', 'fix', finding.fix.manual);
  for (const step of finding.fix.steps) line(io, '', 'fix', step.text);
}

/** `--fix` on a finding it cannot fix here: the finding, and why nothing ran. */
export function reportNotFixed(name: string, finding: Finding, io: CommandIo): void {
  reportFinding(name, finding, io);
  line(io, '', 'not fixed', finding.fix?.manual ?? 'no automatic fix here');
}

/** `--fix` starting on a finding. */
export function reportFixing(name: string, finding: Finding, io: CommandIo): void {
  line(io, name, 'fixing', finding.detail);
}

/** A fix step about to run, as the command it is. */
export function reportStep(text: string, io: CommandIo): void {
  io.stdout.write(`$ ${text}\n`);
}

/** The last line: nothing missing, or how many things are and what sets them up. */
export function reportSummary(missing: number, fixed: boolean, io: CommandIo): void {
  io.stdout.write(
    missing === 0
      ? 'nothing missing\n'
      : `${missing} missing${fixed ? '' : ': `dreamgym doctor --fix` sets them up (the commands above)'}\n`,
  );
}
