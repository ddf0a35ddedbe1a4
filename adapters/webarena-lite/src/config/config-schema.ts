/**
 * The WebArena task config, as a zod schema: the format of WebArena's `test.raw.json` and
 * per-task `config_files/*.json`, and of WebArena-Lite's `test_webarena_lite.raw.json`
 * (VisualAgentBench). Fields a config adds beyond these are kept.
 */
import { z } from 'zod';
import { parseHelperCall } from '../evaluation/helper-call.js';
import { unknownPlaceholders } from './sites.js';

/** What a value is, for messages: `null`, `nothing`, `a list`, `an object`, `a number`... */
const describe = (value: unknown) =>
  value === null
    ? 'null'
    : value === undefined
      ? 'nothing'
      : Array.isArray(value)
        ? 'a list'
        : typeof value === 'object'
          ? 'an object'
          : `a ${typeof value}`;
const text = z
  .union([z.string(), z.number(), z.boolean()], {
    error: (issue) => `expected a phrase (a string or number), got ${describe(issue.input)}`,
  })
  .transform(String);
/** A list of phrases; a single phrase is accepted as a list of one (task 81 of WebArena-Lite writes one). */
const phrases = z.union([z.array(text), text.transform((value) => [value])], {
  error: (issue) =>
    `expected a list of phrases (strings), or one phrase, got ${describe(issue.input)}`,
});

const noUnknownPlaceholder = (value: string, context: z.RefinementCtx) => {
  const unknown = unknownPlaceholders(value);
  if (unknown.length > 0) {
    context.addIssue({
      code: 'custom',
      message: `unknown site placeholder ${unknown.join(', ')}: WebArena's are __SHOPPING__, __SHOPPING_ADMIN__, __GITLAB__, __REDDIT__, __MAP__, __WIKIPEDIA__, __HOMEPAGE__`,
    });
  }
};

const url = z.string().superRefine(noUnknownPlaceholder);

const helperOrText = (allowPlain: (value: string) => boolean, what: string) =>
  z.string().superRefine((value, context) => {
    noUnknownPlaceholder(value, context);
    if (value.startsWith('func:')) {
      const call = parseHelperCall(value.slice('func:'.length));
      if ('error' in call) context.addIssue({ code: 'custom', message: call.error });
    } else if (!allowPlain(value)) {
      context.addIssue({ code: 'custom', message: what });
    }
  });

/** Reference answers of `string_match` (and the content checks of `program_html`). */
export const ReferenceAnswersSchema = z
  .object({
    /** The answer, compared after trimming quotes and lower-casing. */
    exact_match: text.optional(),
    /** Phrases that must all appear (` |OR| ` separates alternatives). */
    must_include: phrases.optional(),
    /** Phrases that must not appear. */
    must_exclude: phrases.optional(),
    /** At least one of these must appear. */
    one_of: phrases.optional(),
    /** Numeric conditions on the answer (`>= 3`, `== 12 |OR| == 13`). */
    required_values: phrases.optional(),
    /** Judged by an LLM against these references; `N/A` marks an unachievable task. */
    fuzzy_match: z.union([z.literal('N/A'), phrases]).optional(),
  })
  .loose()
  .refine(
    (answers) => Object.keys(answers).length > 0,
    'needs at least one kind of reference answer',
  );
/** Reference answers of a config. */
export type ReferenceAnswers = z.output<typeof ReferenceAnswersSchema>;

/** One `program_html` check: a page, a locator evaluated in it, and what it must contain. */
export const ProgramHtmlCheckSchema = z
  .object({
    /** `last` (the page the episode ended on), a URL, or `func:helper(...)`. */
    url: helperOrText(() => true, ''),
    /** Empty (the whole page), JavaScript starting with `document.` or `[...document.`, `lambda:...`, or `func:helper(...)`. */
    locator: helperOrText(
      (value) =>
        value.trim() === '' ||
        value.startsWith('document.') ||
        value.startsWith('[...document.') ||
        value.startsWith('lambda:'),
      'must be empty, JavaScript starting with `document.` or `[...document.`, `lambda:...`, or `func:helper(...)`',
    ),
    required_contents: z
      .object({
        exact_match: text.optional(),
        must_include: phrases.optional(),
        must_exclude: phrases.optional(),
        required_values: phrases.optional(),
        fuzzy_match: phrases.optional(),
      })
      .loose()
      .refine(
        (contents) => Object.keys(contents).length > 0,
        'needs exact_match, must_include, must_exclude, required_values or fuzzy_match',
      ),
    /** JavaScript run before the locator (VisualWebArena configs). */
    prep_actions: z.array(z.string()).optional(),
  })
  .loose();
/** One `program_html` check. */
export type ProgramHtmlCheck = z.output<typeof ProgramHtmlCheckSchema>;

/** The evaluation spec of a config. */
export const EvaluationSpecSchema = z
  .object({
    eval_types: z.array(z.enum(['string_match', 'url_match', 'program_html'])).min(1),
    reference_answers: ReferenceAnswersSchema.nullable().optional(),
    reference_url: url.nullable().optional(),
    program_html: z.array(ProgramHtmlCheckSchema).nullable().optional(),
    /** `GOLD in PRED` (a reference URL inside the final URL) or `EXACT` (the default). */
    url_note: z.enum(['GOLD in PRED', 'EXACT']).nullable().optional(),
    /** Why an unachievable task cannot be done (judged against the agent's answer). */
    string_note: z.string().nullable().optional(),
    reference_answer_raw_annotation: z.unknown().optional(),
  })
  .loose()
  .superRefine((spec, context) => {
    if (spec.eval_types.includes('string_match') && !spec.reference_answers) {
      context.addIssue({
        code: 'custom',
        path: ['reference_answers'],
        message: 'string_match needs reference_answers',
      });
    }
    if (spec.eval_types.includes('url_match') && !spec.reference_url?.trim()) {
      context.addIssue({
        code: 'custom',
        path: ['reference_url'],
        message: 'url_match needs a reference_url',
      });
    }
    if (spec.eval_types.includes('program_html') && (spec.program_html ?? []).length === 0) {
      context.addIssue({
        code: 'custom',
        path: ['program_html'],
        message: 'program_html needs at least one check',
      });
    }
  });
/** The evaluation spec of a config. */
export type EvaluationSpec = z.output<typeof EvaluationSpecSchema>;

/** One WebArena task config. */
export const WebarenaConfigSchema = z
  .object({
    /** The sites the task uses (`shopping`, `gitlab`...). */
    sites: z.array(z.string().min(1)).min(1),
    task_id: z.number().int().nonnegative(),
    require_login: z.boolean().default(false),
    /** The login's storage-state file, relative to WebArena's working directory (`./.auth/gitlab_state.json`). */
    storage_state: z.string().min(1).nullable().optional(),
    /** Start page; several are joined by ` |AND| ` (one tab each). */
    start_url: z.string().min(1).superRefine(noUnknownPlaceholder),
    geolocation: z
      .object({ latitude: z.number(), longitude: z.number(), accuracy: z.number().optional() })
      .nullable()
      .optional(),
    intent_template: z.string().optional(),
    instantiation_dict: z.record(z.string(), z.unknown()).optional(),
    /** The instruction. */
    intent: z.string().min(1),
    require_reset: z.boolean().optional(),
    intent_template_id: z.number().int().optional(),
    eval: EvaluationSpecSchema,
  })
  .loose();
/** One WebArena task config, as validated. */
export type WebarenaConfig = z.output<typeof WebarenaConfigSchema>;
