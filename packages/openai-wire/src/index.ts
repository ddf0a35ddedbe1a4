/**
 * `@dreamgym/openai-wire`: the OpenAI wire format for servers on `node:http`, written once for
 * DreamGym's OpenAI-compatible servers (`dreamgym model serve` in `@dreamgym/llama`, the fake
 * server of the repository's tests). Requests are read under a size limit and validated against
 * the schemas (a 400 that names the field otherwise), response bodies are built in OpenAI's
 * layout, and failures are answered with OpenAI's `{"error": {...}}`. Beyond OpenAI's fields,
 * the ones RL trainers take from vLLM: token ids, prompt log-probabilities, `POST /tokenize` and
 * the LoRA adapter endpoints. Chat completions stream in vLLM's chunk layout (token ids included).
 *
 * @packageDocumentation
 */
export {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  type CompletionToken,
  chatCompletionBody,
  chatMessageText,
  completionBody,
  completionLogprobs,
  EmbeddingsRequestSchema,
  embeddingsBody,
  LoadLoraAdapterRequestSchema,
  modelListBody,
  type OpenAIChatMessage,
  type PromptTokenLogprobs,
  stopSequences,
  TokenizeRequestSchema,
  UnloadLoraAdapterRequestSchema,
  type WireToken,
} from './bodies.js';
export { chatCompletionChunks, serverSentEvents } from './chat-stream.js';
export {
  OpenAIHttpError,
  openAIErrorType,
  parseOpenAIRequest,
  readRequestBody,
  sendJson,
  sendOpenAIError,
  sendText,
} from './http.js';
