/**
 * `dreamgym train`: DreamGym training of one domain (synthetic phase, then optional
 * sim-to-real), with the starting and the trained policy evaluated before and after. Every
 * model-backed part is chosen by flags (`--experience`, `--task-generator`, `--embedder`,
 * `--policy`), backed by one `--model`: in process (`local`, a GGUF) or behind `--base-url`.
 * `trainRunFromFlags` reads the flags once; `prepareRun` builds the loop's components from them.
 */
import { DreamGymLoop } from '@dreamgym/core';
import { ProgressReporter } from '@dreamgym/run';
import { type Command, type CommandIo, type FlagSpecs, parseFlags } from '../command-arguments.js';
import { MODEL_SELECTION_FLAGS } from '../model-flags.js';
import { prepareRun } from '../prepare-run.js';
import { loopFlagSpecs, setupFlagSpecs, trainRunFromFlags } from '../run-flags.js';
import { formatRunResult, iterationLines } from '../train-result.js';

const TRAIN_USAGE = `Usage: dreamgym train --domain NAME [options]

Domain and data:
  --domain NAME              domain adapter, loaded from @dreamgym/NAME (e.g. alfworld)
  --adapter-package NAME     adapter package to load instead of @dreamgym/NAME
  --data DIR                 the domain's dataset folder (default: $DREAMGYM_DATA_DIR/NAME)
  --offline FILE             extra offline trajectories (JSONL), repeatable
  --offline-limit N          use only the first N of the dataset's offline trajectories
  --skip-invalid             load the valid tasks and trajectories, logging each invalid one
                             (file, line, id) instead of stopping at the first
  --buffer-cap N             most transitions the replay buffer keeps: the oldest written-back
                             ones are evicted first (offline seeds never); default unbounded
  --train-tasks N            seed tasks: the first N training tasks (default all)
  --eval-split NAME          split of the evaluation tasks (default: the adapter's, e.g. valid_seen)
  --eval-tasks N             evaluation tasks: the first N of the split (default all)
  --index auto|flat|hnsw     replay-buffer index (default auto: flat below 20,000 transitions)
  --target-recall X          recall@8 an HNSW index's search depth is tuned to (default 0.95)
  --no-outcome-judge         the experience model's own outcomes instead of the judge learned
                             from the offline successes and failures
  --no-world-memory          next states from neighbours only, not from what the task's own
                             world's offline episodes saw

Run:
  --config FILE              JSON file with the loop configuration (any field of DreamGymConfig)
                             and an optional "setup" object with the options above
  --run-dir DIR              run folder (default runs/NAME-<date>); holds metrics, checkpoints
  --resume                   continue the run in --run-dir from its last checkpoint
  --extend                   with --resume, go on to a larger --iterations or --real-budget
                             (a learning curve taken further; nothing else may change)
  --no-baseline              do not evaluate the starting policy first (evaluation.atStart)
  --force                    train even when the pre-flight check finds the synthetic
                             environment untrustworthy on this domain (held-out recall of
                             real successes surely below 90%, or false successes surely
                             above 2%: their 95% intervals wholly past)

Models (the defaults are embedded and need no model; one --model backs every LLM part):
  --experience embedded|llm|hybrid   experience model: retrieval over the offline transitions
                             (default), the reasoning LLM, or the LLM grounded by retrieval
  --task-generator mutation|llm   curriculum task generator: the adapter's mutations (default)
                             or the LLM writing variations of informative tasks
  --embedder hashing|openai  replay-buffer embedder (default hashing)
  --model local|PATH.gguf|NAME   the LLM: local (SmolLM2-135M-Instruct in process, the default),
                             any GGUF file, or with --base-url the served model's name. The
                             experience model and the task generator share one loaded copy;
                             --policy llm loads its own (training changes its weights)
  --base-url URL             an OpenAI-compatible server (vLLM, SGLang, Ollama, dreamgym model
                             serve) for --experience and --task-generator; API key from
                             DREAMGYM_API_KEY or OPENAI_API_KEY
  --experience-format compact|standard   experience prompt (default: compact for local models)
  --experience-temperature X sampling temperature of the experience model (default 0)
  --embedding-model NAME     embedding model of --embedder openai
  --embedding-base-url URL   its server (default --base-url)
  --model-concurrency N  --model-context-size N  --model-threads N   the in-process model of
                             --experience and --task-generator (the LLM policy's settings are
                             the "llmPolicy" object of --config)
  A resumed run keeps its models (run.json); only --base-url, --embedding-base-url,
  --model-concurrency and --model-threads may change.

Policy:
  --policy linear|llm        the policy to train: linear softmax (default, embedded) or an LLM
                             (@dreamgym/llama: llama.cpp acts, the torch worker in
                             trainers/python learns with LoRA; needs the project's Python)
  --policy-model local|PATH.gguf|NAME   the LLM policy's model (default --model, or local);
                             always in process, so name it when --base-url serves the others
  --policy-action generate|score   the LLM writes its action (default) or chooses among the
                             admissible actions by likelihood
  --policy-device cpu|cuda   where the LLM's gradient steps run (default cpu)
  --policy-package NAME      package providing createLlmPolicy (default @dreamgym/llama)
                             (more LLM settings: an "llmPolicy" object in --config, e.g.
                             {"maxTokens": 32, "trainer": {"learningRate": 1e-4, "topLayers": 4}})
  --warm-start none|bc       start from behaviour cloning on the offline trajectories (default none)

Loop (override the config file):
  --iterations N  --seed N  --algorithm grpo|dr-grpo|ppo  --tasks-per-iteration N
  --rollouts-per-task N  --max-steps N  --lambda X  --k N  --concurrency N
  --real-budget N            sim-to-real: real transitions to spend after the synthetic phase
  --eval-every K             evaluate every K iterations and after the last (0: only after the last)
  --eval-env real|synthetic|both   where evaluations run (default: the adapter's, real where
                             its real environment runs without set-up; synthetic needs
                             evaluation tasks with a known initial state)
  --eval-mode greedy|sampled|both  how actions are chosen in evaluations (default both);
                             before and after training are always measured alike
  --gap-tasks N              training tasks played in both environments at each evaluation,
                             to report the synthetic-to-real gap (needs the real environment)
  --keep-best-on-real N      end on the policy that did best on N training tasks played in
                             the real environment at the start, every selection.every (5)
                             iterations and at the end (a lying synthetic environment then
                             costs time, not quality); their real steps count as the run's
                             real transitions
  --credit episode|fork      how a synthetic step is credited: by its episode's return
                             (default), or by its own, against its state's value from
                             forked continuations of the synthetic environment
                             (trainer.forks: continuations, every)

Ablations:
  --no-curriculum            no task generation (seed tasks only)
  --no-retrieval             the experience model gets no retrieved demonstrations (k = 0)
  --no-replay-write-back     synthetic transitions are not added to the replay buffer
  --no-history               the experience model sees no interaction history`;

const TRAIN_OPTIONS: FlagSpecs = {
  domain: { type: 'string' },
  data: { type: 'string' },
  ...setupFlagSpecs([
    'adapter-package',
    'offline',
    'offline-limit',
    'skip-invalid',
    'buffer-cap',
    'train-tasks',
    'eval-split',
    'eval-tasks',
    'index',
    'target-recall',
    'no-outcome-judge',
    'no-world-memory',
  ]),
  config: { type: 'string' },
  'run-dir': { type: 'string' },
  resume: { type: 'boolean' },
  extend: { type: 'boolean' },
  'no-baseline': { type: 'boolean' },
  force: { type: 'boolean' },
  ...loopFlagSpecs([
    'iterations',
    'seed',
    'algorithm',
    'tasks-per-iteration',
    'rollouts-per-task',
    'max-steps',
    'lambda',
    'k',
    'concurrency',
    'real-budget',
    'eval-every',
    'eval-env',
    'eval-mode',
    'gap-tasks',
    'keep-best-on-real',
    'credit',
    'warm-start',
    'no-curriculum',
    'no-retrieval',
    'no-replay-write-back',
    'no-history',
  ]),
  ...MODEL_SELECTION_FLAGS,
  'policy-model': { type: 'string' },
  'policy-action': { type: 'string' },
  'policy-device': { type: 'string' },
  'policy-package': { type: 'string' },
};

async function train(args: string[], io: CommandIo): Promise<number> {
  const values = parseFlags(args, TRAIN_OPTIONS, TRAIN_USAGE);
  if (values.help) {
    io.stdout.write(`${TRAIN_USAGE}\n`);
    return 0;
  }
  const run = await prepareRun(await trainRunFromFlags(values, io, TRAIN_USAGE), io);
  try {
    const progress = new ProgressReporter('dreamgym train', 1, io.stderr);
    const loop = new DreamGymLoop({
      config: run.config,
      components: {
        ...run.components,
        log: (message: string) => progress.log(message),
        onIteration: (metrics, { done, total }) => {
          progress.total = total;
          progress.update(done, {
            successRate: metrics.successRate,
            fields: { phase: metrics.phase, pool: metrics.poolSize, buffer: metrics.bufferSize },
          });
          for (const line of iterationLines(metrics)) progress.log(line);
        },
      },
      runDirectory: run.runDirectory,
    });
    const result = await loop.run({ resume: run.resume, extend: run.extend });
    progress.finish();
    io.stdout.write(formatRunResult(result, run.runDirectory, run.config, run.preflight));
    return 0;
  } finally {
    await run.close();
  }
}

/** `dreamgym train`. */
export const trainCommand: Command = {
  name: ['train'],
  summary: 'train a policy with DreamGym (synthetic experience, then optional sim-to-real)',
  run: train,
};
