/**
 * Flag parsing shared by every command: strict `parseArgs`, typed number flags, JSON files,
 * and errors that name the flag.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
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

export type FlagValues = Record<string, string | boolean | string[] | undefined>;
export type FlagSpecs = Record<
  string,
  { type: 'string' | 'boolean'; multiple?: boolean; short?: string }
>;

/** Strict flag parsing (`--help` always allowed); an unknown flag fails with the usage. */
export function parseFlags(args: string[], options: FlagSpecs, usage: string): FlagValues {
  try {
    const { values } = parseArgs({
      args,
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: false,
    });
    return values as FlagValues;
  } catch (error) {
    fail(`${(error as Error).message}\n\n${usage}`);
  }
}

/** The integer value of a flag, or undefined when absent. */
export function integer(
  value: string | boolean | string[] | undefined,
  flag: string,
): number | undefined {
  if (value === undefined || typeof value !== 'string') return undefined;
  const number = Number(value);
  if (!Number.isInteger(number)) fail(`${flag} must be an integer, got "${value}".`, flag);
  return number;
}

/** The numeric value of a flag, or undefined when absent. */
export function decimal(
  value: string | boolean | string[] | undefined,
  flag: string,
): number | undefined {
  if (value === undefined || typeof value !== 'string') return undefined;
  const number = Number(value);
  if (!Number.isFinite(number)) fail(`${flag} must be a number, got "${value}".`, flag);
  return number;
}

/** `--target-recall`: a recall@8 in (0, 1], or undefined when absent. */
export function recallTarget(value: string | boolean | string[] | undefined): number | undefined {
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

/** Reads a JSON object from `file`; errors name the flag that gave the file. */
export async function readJsonFile(file: string, flag: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    fail(`${flag} ${file} does not exist.`, flag);
  }
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch (error) {
    fail(`${file} is not valid JSON: ${(error as Error).message}`, flag);
  }
}

/** `$DREAMGYM_DATA_DIR/<domain>`, or undefined when the variable is unset. */
export function defaultDataDirectory(domain: string, io: CommandIo): string | undefined {
  const root = io.env.DREAMGYM_DATA_DIR;
  return root ? resolve(io.cwd, root, domain) : undefined;
}
