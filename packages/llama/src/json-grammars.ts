/**
 * Grammars that constrain an answer to JSON: the request's JSON Schema compiled for llama.cpp
 * (`json_schema`), or any JSON object when the schema uses what the grammar cannot express
 * (`json_object`, with the schema stated in the system message instead). Compiled once per
 * schema and kept.
 */
import type { ChatMessage } from '@dreamgym/core/models';
import type { Llama, LlamaGrammar } from 'node-llama-cpp';
import { toGrammarSchema, UnsupportedSchemaError } from './grammar-schema.js';

/** A compiled grammar and what it enforces. */
export interface JsonGrammar {
  grammar: LlamaGrammar;
  /** `json_schema`: the schema itself; `json_object`: any JSON object. */
  mode: 'json_schema' | 'json_object';
}

/** A GBNF string literal of `text` (JSON's escapes are GBNF's). */
const gbnfLiteral = (text: string) => JSON.stringify(text);

/** The grammars of one llama.cpp binding, compiled on first use. */
export class JsonGrammars {
  private readonly compiled = new Map<string, Promise<JsonGrammar>>();
  private readonly choices = new Map<string, Promise<LlamaGrammar>>();

  constructor(private readonly llama: Llama) {}

  /** The grammar that admits exactly one of `choices` (vLLM's `structured_outputs.choice`). */
  choice(choices: readonly string[]): Promise<LlamaGrammar> {
    const key = JSON.stringify(choices);
    let compiled = this.choices.get(key);
    if (!compiled) {
      compiled = this.llama.createGrammar({
        grammar: `root ::= ${choices.map(gbnfLiteral).join(' | ')}`,
      });
      if (this.choices.size > 256) this.choices.clear();
      this.choices.set(key, compiled);
    }
    return compiled;
  }

  /** The grammar of `schema`; without one, any JSON object. */
  async for(schema: Record<string, unknown> | undefined): Promise<JsonGrammar> {
    const key = schema === undefined ? '' : JSON.stringify(schema);
    let compiled = this.compiled.get(key);
    if (!compiled) {
      compiled = (async () => {
        if (schema !== undefined) {
          try {
            const grammarSchema = toGrammarSchema(schema) as never;
            return {
              grammar: await this.llama.createGrammarForJsonSchema(grammarSchema),
              mode: 'json_schema' as const,
            };
          } catch (error) {
            if (!(error instanceof UnsupportedSchemaError)) throw error;
          }
        }
        return {
          grammar: await this.llama.createGrammarForJsonSchema({
            type: 'object',
            additionalProperties: true,
          } as never),
          mode: 'json_object' as const,
        };
      })();
      compiled.catch(() => this.compiled.delete(key));
      this.compiled.set(key, compiled);
    }
    return compiled;
  }
}

/** The system instruction that states the schema when the grammar only enforces a JSON object. */
export function jsonInstruction(schema: Record<string, unknown>): string {
  return `Answer with a single JSON object and nothing else. It must conform to this JSON Schema:\n${JSON.stringify(schema)}`;
}

/** `messages` with `instruction` appended to the system message (or as one, first). */
export function withSystemInstruction(
  messages: readonly ChatMessage[],
  instruction: string,
): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role === 'system')
    return [{ role: 'system', content: `${first.content}\n\n${instruction}` }, ...rest];
  return [{ role: 'system', content: instruction }, ...messages];
}
