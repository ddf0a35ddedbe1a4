/**
 * `dreamgym annotate`: teacher reasoning traces R* for a domain's offline transitions, and
 * the experience-model SFT set built from them (chat JSONL: the experience model's prompt,
 * then the reasoning and the next state). Resumable: traces already written are kept.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import {
  HashingEmbedder,
  ReplayBuffer,
  type Trajectory,
  trajectoryToTransitions,
} from '@dreamgym/core';
import {
  type AnnotationCounts,
  annotateReasoning,
  exportExperienceSft,
  readReasoningTraces,
  type SftExportCounts,
} from '@dreamgym/core/annotate';
import { compactExperienceFormat, standardExperienceFormat } from '@dreamgym/core/experience';
import { loadDomainAdapter, openChatModel, ProgressReporter } from '@dreamgym/run';
import { type Command, type CommandIo, fail, integer, parseFlags } from '../command-arguments.js';
import { defaultDataDirectory } from '../run-flags.js';

const ANNOTATE_USAGE = `Usage: dreamgym annotate --domain NAME --out DIR [options]

Writes DIR/traces.jsonl (one teacher reasoning trace per distinct offline transition; a run
that stops resumes where it was) and DIR/sft.jsonl (the experience-model SFT set: the
experience model's prompt, then the reasoning and the next state as the answer).

  --domain NAME              domain adapter (e.g. alfworld)
  --data DIR                 the domain's dataset folder (default: $DREAMGYM_DATA_DIR/NAME)
  --out DIR                  output folder
  --teacher local|PATH.gguf|NAME   the teacher model (default local); with --base-url, the
                             served model's name
  --base-url URL             an OpenAI-compatible server for the teacher
  --offline-limit N          use the first N offline trajectories of the dataset
  --limit N                  annotate at most N new transitions in this run
  --format compact|standard  prompt format of the SFT set (default compact for local teachers)
  --k N                      demonstrations per SFT example (default 3)
  --concurrency N            teacher requests in flight (default 2)
  --max-reasoning-chars N    longest reasoning (default 160)
  --export-only              only write sft.jsonl from the traces already there`;

async function annotate(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(
    args,
    {
      domain: { type: 'string' },
      data: { type: 'string' },
      out: { type: 'string' },
      teacher: { type: 'string' },
      'base-url': { type: 'string' },
      'offline-limit': { type: 'string' },
      limit: { type: 'string' },
      format: { type: 'string' },
      k: { type: 'string' },
      concurrency: { type: 'string' },
      'max-reasoning-chars': { type: 'string' },
      'export-only': { type: 'boolean' },
    },
    ANNOTATE_USAGE,
  );
  if (values.help) {
    io.stdout.write(`${ANNOTATE_USAGE}\n`);
    return 0;
  }
  const string = (flag: string) => values[flag] as string | undefined;
  const domainName = string('domain');
  if (!domainName) fail(`--domain is required.\n\n${ANNOTATE_USAGE}`, '--domain');
  const out = string('out');
  if (!out) fail(`--out DIR is required.\n\n${ANNOTATE_USAGE}`, '--out');
  const data = string('data') ?? defaultDataDirectory(domainName, io);
  if (!data) {
    fail(
      `--data DIR is required, or set DREAMGYM_DATA_DIR to the folder holding ${domainName}/.`,
      '--data',
    );
  }
  const baseUrl = string('base-url');
  const teacherSpec = string('teacher') ?? (baseUrl ? undefined : 'local');
  if (teacherSpec === undefined)
    fail('--base-url needs --teacher NAME: the model name the server serves.', '--teacher');
  const formatName = string('format');
  if (formatName !== undefined && formatName !== 'compact' && formatName !== 'standard') {
    fail(`--format must be compact or standard, got "${formatName}".`, '--format');
  }
  const offlineLimit = integer(string('offline-limit'), '--offline-limit');
  const limit = integer(string('limit'), '--limit');
  const k = integer(string('k'), '--k') ?? 3;
  const concurrency = integer(string('concurrency'), '--concurrency') ?? 2;
  const maxReasoningChars = integer(string('max-reasoning-chars'), '--max-reasoning-chars') ?? 160;

  const log = (message: string) => io.stderr.write(`${message}\n`);
  const adapter = await loadDomainAdapter(domainName, { dataDir: resolve(io.cwd, data) });
  const trajectories: Trajectory[] = [];
  for await (const trajectory of adapter.datasets.trajectories.load(resolve(io.cwd, data), {
    ...(offlineLimit === undefined ? {} : { limit: offlineLimit }),
  })) {
    // Trajectories without an id are named as `dreamgym train` names them in its buffer.
    trajectories.push({ ...trajectory, id: trajectory.id ?? `offline:${trajectories.length}` });
  }
  // The replay buffer the SFT prompts' demonstrations come from, as at inference.
  const replayBuffer = ReplayBuffer.create({
    embedder: new HashingEmbedder({ dimension: 256 }),
    index: { type: 'flat' },
  });
  await replayBuffer.add(
    trajectories.flatMap((trajectory) =>
      trajectoryToTransitions(trajectory, { trajectoryId: trajectory.id! }),
    ),
  );
  log(
    `${domainName}: ${trajectories.length} offline trajectories, ${replayBuffer.size} transitions in the replay buffer`,
  );
  const directory = resolve(io.cwd, out);
  await mkdir(directory, { recursive: true });
  const tracesFile = join(directory, 'traces.jsonl');
  const sftFile = join(directory, 'sft.jsonl');
  const description = adapter.prompts.environmentDescription;
  const opened = values['export-only']
    ? undefined
    : await openChatModel(
        {
          model: /\.gguf$/i.test(teacherSpec) ? resolve(io.cwd, teacherSpec) : teacherSpec,
          ...(baseUrl ? { baseUrl } : {}),
          concurrency,
        },
        io,
      );
  const teacherId = opened?.chat.id ?? 'none';
  // The exported prompts are budgeted with the tokenizer of a local teacher, as at inference.
  const countTokens = opened?.countTokens;
  let annotation: AnnotationCounts | undefined;
  let traces: Map<string, unknown>;
  let exported: SftExportCounts;
  const format =
    (formatName ?? (opened?.local || !opened ? 'compact' : 'standard')) === 'compact'
      ? compactExperienceFormat()
      : standardExperienceFormat;
  try {
    if (opened) {
      const transitions = trajectories.reduce(
        (sum, trajectory) =>
          sum + Math.max(0, trajectory.steps.length - (trajectory.finalObservation ? 0 : 1)),
        0,
      );
      const progress = new ProgressReporter('dreamgym annotate', limit ?? transitions, io.stderr);
      log(
        `teacher: ${teacherId}; ${trajectories.length} offline trajectories, ${transitions} transitions`,
      );
      annotation = await annotateReasoning({
        teacher: opened.chat,
        trajectories,
        environmentDescription: description,
        file: tracesFile,
        ...(limit === undefined ? {} : { limit }),
        concurrency,
        maxReasoningChars,
        ...(countTokens ? { countTokens } : {}),
        onProgress: (counts) =>
          progress.update(counts.annotated + counts.failed, {
            fields: {
              annotated: counts.annotated,
              failed: counts.failed,
              existing: counts.existing,
            },
          }),
      });
      progress.finish();
    }
    const read = await readReasoningTraces(tracesFile);
    traces = read;
    exported = await exportExperienceSft({
      trajectories,
      traces: read,
      environmentDescription: description,
      file: sftFile,
      format,
      retriever: replayBuffer,
      k,
      domain: adapter.name,
      parseAction: (text) => adapter.parseAction(text),
      ...(countTokens ? { countTokens } : {}),
    });
  } finally {
    await opened?.dispose();
  }
  await replayBuffer.close();
  const manifest = {
    domain: domainName,
    teacher: teacherId,
    format: format.name,
    k,
    traces: traces.size,
    ...(annotation ? { annotation } : {}),
    export: exported,
  };
  await writeFile(join(directory, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  io.stdout.write(
    `${tracesFile}: ${traces.size} traces${annotation ? ` (${annotation.annotated} new, ${annotation.failed} failed, ${annotation.duplicates} duplicate transitions)` : ''}\n${sftFile}: ${exported.examples} examples (${exported.missingTrace} transitions without a trace yet)\n`,
  );
  return 0;
}

/** `dreamgym annotate`. */
export const annotateCommand: Command = {
  name: ['annotate'],
  summary: 'teacher reasoning traces for offline transitions, and the experience-model SFT set',
  run: annotate,
};
