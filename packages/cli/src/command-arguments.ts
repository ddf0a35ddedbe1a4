/**
 * Flag parsing shared by every command: strict `parseArgs`, typed number flags, and errors
 * that name the flag.
 */
import { parseArgs } from 'node:util';
import { ConfigError, type EvaluationMetrics } from '@dreamgym/core';

/** Where a command writes: injectable for tests. */
export interface CommandIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** One `dreamgym` command (or sub-command, such as `data explore`). */
export interface Command {
  /** Words after `dreamgym` that select it: `['train']`, `['data', 'explore']`. */
  name: readonly string[];
  /** One line for the command list. */
  summary: string;
  /** Runs the command with the arguments after its name; returns the exit code. */
  run(args: string[], io: CommandIo): Promise<number>;
}

/** Throws a `ConfigError` naming the flag: the CLI prints it and exits with 2. */
export function fail(message: string, field?: string): never {
  throw new ConfigError(message, field === undefined ? {} : { field });
}

export type FlagValues = Record<string, string | number | boolean | string[] | undefined>;

/** One flag: its parser type, and for a typed value the function that reads its text. */
export interface FlagSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** Reads the flag's text into its value (a number...); its errors name the flag. */
  parse?: (text: string, flag: string) => unknown;
}
export type FlagSpecs = Record<string, FlagSpec>;

/**
 * Strict flag parsing (`--help` always allowed); an unknown flag fails with the usage. A flag
 * with a `parse` function comes back as its value (an integer flag as a number), so a bad
 * value fails here, naming the flag, before anything runs.
 */
export function parseFlags(args: string[], options: FlagSpecs, usage: string): FlagValues {
  let values: FlagValues;
  try {
    const parserOptions = Object.fromEntries(
      Object.entries(options).map(([name, { parse: _parse, ...spec }]) => [name, spec]),
    );
    values = parseArgs({
      args,
      options: { ...parserOptions, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    }).values as FlagValues;
  } catch (error) {
    fail(`${(error as Error).message}\n\n${usage}`);
  }
  for (const [name, { parse }] of Object.entries(options)) {
    const text = values[name];
    if (parse !== undefined && typeof text === 'string')
      values[name] = parse(text, `--${name}`) as FlagValues[string];
  }
  return values;
}

/** The integer value of a flag (its text, or the value `parseFlags` read), or undefined when absent. */
export function integer(value: FlagValues[string], flag: string): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (value === undefined || typeof value !== 'string') return undefined;
  const number = Number(value);
  if (!Number.isInteger(number)) fail(`${flag} must be an integer, got "${value}".`, flag);
  return number;
}

/** The numeric value of a flag (its text, or the value `parseFlags` read), or undefined when absent. */
export function decimal(value: FlagValues[string], flag: string): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (value === undefined || typeof value !== 'string') return undefined;
  const number = Number(value);
  if (!Number.isFinite(number)) fail(`${flag} must be a number, got "${value}".`, flag);
  return number;
}

/** `--target-recall`: a recall@8 in (0, 1], or undefined when absent. */
export function recallTarget(value: FlagValues[string]): number | undefined {
  const target = decimal(value, '--target-recall');
  if (target !== undefined && !(target > 0 && target <= 1))
    fail(`--target-recall must be in (0, 1], got ${target}.`, '--target-recall');
  return target;
}

/** `12.5% [95% CI 8.1-18.0%] on 40 real episodes`. */
export function percent(metrics: EvaluationMetrics): string {
  const [low, high] = metrics.successInterval95;
  return `${(metrics.successRate * 100).toFixed(1)}% [95% CI ${(low * 100).toFixed(1)}-${(high * 100).toFixed(1)}%] on ${metrics.episodes} ${metrics.environment} episodes`;
}
