export {
  type AnnotateReasoningOptions,
  type AnnotationCounts,
  annotateReasoning,
  type ReasoningTrace,
  ReasoningTraceSchema,
  readReasoningTraces,
} from './reasoning-annotator.js';
export {
  type ExperienceSftExample,
  ExperienceSftExampleSchema,
  type ExportExperienceSftOptions,
  exportExperienceSft,
  type SftExportCounts,
} from './sft-export.js';
