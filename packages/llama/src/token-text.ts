/**
 * Text of generated tokens, one piece per token, so that the pieces spell the generated text
 * exactly (what OpenAI-style per-token log-probabilities promise). A token that ends inside a
 * multi-byte character gets an empty piece; the token that completes it carries the character.
 */
import type { LlamaModel, Token } from 'node-llama-cpp';

export class TokenTextDecoder {
  private readonly tokens: Token[] = [];
  private emitted = '';

  /** `special`: write special tokens (`<|im_start|>`) out, as an echoed prompt needs. */
  constructor(
    private readonly model: LlamaModel,
    private readonly special = false,
  ) {}

  /** Adds a token and returns the text it adds. */
  push(token: Token): string {
    this.tokens.push(token);
    const full = this.model.detokenize(this.tokens, this.special);
    if (full.endsWith('\uFFFD') || !full.startsWith(this.emitted)) return '';
    const piece = full.slice(this.emitted.length);
    this.emitted = full;
    return piece;
  }

  /** The text so far (complete characters only). */
  get text(): string {
    return this.emitted;
  }
}

/**
 * Finds where a JSON value written character by character ends: under a JSON grammar the
 * model may keep writing whitespace after the value, so generation stops at its last bracket.
 */
export class JsonEndDetector {
  private depth = 0;
  private started = false;
  private inString = false;
  private escaped = false;
  private consumed = 0;

  /** Feeds the next piece; returns the offset just past the value's end within all text fed, or -1. */
  feed(piece: string): number {
    for (let index = 0; index < piece.length; index += 1) {
      const character = piece[index]!;
      const position = this.consumed + index;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (character === '\\') this.escaped = true;
        else if (character === '"') this.inString = false;
        continue;
      }
      if (character === '"') this.inString = true;
      else if (character === '{' || character === '[') {
        this.depth += 1;
        this.started = true;
      } else if (character === '}' || character === ']') {
        this.depth -= 1;
        if (this.started && this.depth === 0) {
          this.consumed += piece.length;
          return position + 1;
        }
      }
    }
    this.consumed += piece.length;
    return -1;
  }
}
