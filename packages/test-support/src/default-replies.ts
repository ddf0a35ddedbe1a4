/**
 * What the fake OpenAI-compatible server answers when a test does not script it (echoed
 * messages, hashed-trigram embeddings, word tokens) and the bodies of scripted errors and of
 * `response_format` rejections in the styles of real servers.
 */
import { chatMessageText, OpenAIHttpError, openAIErrorType } from '@dreamgym/openai-wire';
import type {
  ChatReply,
  ErrorReply,
  ReceivedChatRequest,
  RejectionStyle,
} from './scripted-replies.js';

/**
 * A deterministic, not normalised vector for `text` (FNV-1a hashed character trigrams),
 * the default embeddings of {@link startOpenAICompatibleServer}. Similar texts get similar
 * vectors, so retrieval tests behave sensibly.
 */
export function deterministicEmbedding(text: string, dimension: number): number[] {
  const vector = new Array<number>(dimension).fill(0);
  const padded = `  ${text.toLowerCase()}  `;
  for (let start = 0; start + 3 <= padded.length; start += 1) {
    let hash = 0x811c9dc5;
    for (let offset = 0; offset < 3; offset += 1) {
      hash ^= padded.charCodeAt(start + offset);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    const sign = hash & 1 ? 1 : -1;
    vector[(hash >>> 1) % dimension] = (vector[(hash >>> 1) % dimension] ?? 0) + sign;
  }
  // A constant offset keeps empty and very short texts away from the zero vector.
  vector[0] = (vector[0] ?? 0) + 0.5;
  return vector;
}

/**
 * Splits a completion into word-sized tokens that concatenate back to it, as the default
 * tokenisation for logprobs and usage.
 */
export function splitIntoTokens(text: string): string[] {
  return text.match(/\s*\S+|\s+/g) ?? [];
}

/** Whitespace-separated words: the fake's token count for prompts. */
export function countWords(text: string): number {
  return text.split(/\s+/).filter((word) => word.length > 0).length;
}

/** The text of a message's content as received (a string, or text parts). */
export function receivedText(content: unknown): string {
  return chatMessageText((content ?? null) as Parameters<typeof chatMessageText>[0]);
}

/** The default chat responder: `{}` when JSON was asked for, else the last user message. */
export function defaultChatResponder(request: ReceivedChatRequest): ChatReply {
  const format = request.response_format?.type;
  if (format === 'json_schema' || format === 'json_object') return '{}';
  const lastUser = [...request.messages].reverse().find((message) => message.role === 'user');
  return receivedText(lastUser?.content);
}

/** The body of a scripted error, in its style. */
export function errorBody(reply: ErrorReply): { text: string; contentType: string } {
  const message = reply.message ?? `Simulated HTTP ${reply.status} from the test server.`;
  const type = reply.errorType ?? openAIErrorType(reply.status);
  switch (reply.bodyStyle ?? 'openai') {
    case 'text':
      return { text: message, contentType: 'text/plain; charset=utf-8' };
    case 'vllm':
      return {
        text: JSON.stringify({ object: 'error', message, type, param: null, code: reply.status }),
        contentType: 'application/json',
      };
    default:
      return {
        text: JSON.stringify(new OpenAIHttpError(reply.status, message, type).toBody()),
        contentType: 'application/json',
      };
  }
}

/** The 400 a server of `style` sends for a `response_format` type it does not support. */
export function rejectionReply(style: RejectionStyle, formatType: string): ErrorReply {
  switch (style) {
    case 'vllm':
      return {
        type: 'error',
        status: 400,
        bodyStyle: 'vllm',
        errorType: 'BadRequestError',
        message: `1 validation error for ChatCompletionRequest\nresponse_format.type\n  Input should be 'text' (type=literal_error, input_value='${formatType}')`,
      };
    case 'llama.cpp':
      return {
        type: 'error',
        status: 400,
        errorType: 'invalid_request_error',
        message: `response_format type must be one of "text" or "json_object", but got: ${formatType}`,
      };
    case 'ollama':
      return {
        type: 'error',
        status: 400,
        errorType: 'invalid_request_error',
        message: `invalid response_format: unsupported type "${formatType}"`,
      };
    default:
      return {
        type: 'error',
        status: 400,
        errorType: 'invalid_request_error',
        message: `Invalid parameter: 'response_format' of type '${formatType}' is not supported with this model.`,
      };
  }
}
