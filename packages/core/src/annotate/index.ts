export {
  type AnnotateReasoningOptions,
  type AnnotationCounts,
  annotateReasoning,
  type ReasoningTrace,
  ReasoningTraceSchema,
  readReasoningTraces,
  transitionKey,
} from './reasoning-annotator.js';
export {
  type ExperienceSftExample,
  ExperienceSftExampleSchema,
  type ExportExperienceSftOptions,
  exportExperienceSft,
  type SftExportCounts,
} from './sft-export.js';
export {
  buildTeacherPrompt,
  type TeacherPromptOptions,
  teacherOutputSchema,
} from './teacher-prompt.js';
