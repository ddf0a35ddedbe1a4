/**
 * The LoRA adapters a model server holds, by the name requests give as `model`: vLLM's and
 * SGLang's `POST /v1/load_lora_adapter` and `POST /v1/unload_lora_adapter`, for
 * {@link startLlamaServer}. An adapter is a GGUF file, or a PEFT folder holding one as
 * `adapter.gguf` (as the DreamGym trainer writes them); each loaded adapter is a second copy
 * of the base model in memory, so their number is capped.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  LoadLoraAdapterRequestSchema,
  OpenAIHttpError,
  parseOpenAIRequest,
  UnloadLoraAdapterRequestSchema,
} from '@dreamgym/openai-wire';
import type { LlamaChatModel } from './llama-chat-model.js';

interface LoadedAdapter {
  model: LlamaChatModel;
  path: string;
  created: number;
}

/** The base model under its accepted names, and the LoRA adapters loaded on top of it. */
export class LoraAdapters {
  private readonly loaded = new Map<string, LoadedAdapter>();

  constructor(
    private readonly base: LlamaChatModel,
    /** The name the server lists for the base model. */
    private readonly baseName: string,
    /** Every name that means the base model. */
    private readonly baseNames: ReadonlySet<string>,
    private readonly maxAdapters: number,
  ) {}

  /** Whether `name` is a loaded adapter. */
  has(name: string | undefined): name is string {
    return name !== undefined && this.loaded.has(name);
  }

  /** The name a reply gives as `model`: the adapter's, or the base model's. */
  replyName(name: string | undefined): string {
    return this.has(name) ? name : this.baseName;
  }

  /** The model a request names: the base (or none named), or a loaded adapter; 404 otherwise. */
  modelFor(name: string | undefined): LlamaChatModel {
    if (name === undefined || name === '' || this.baseNames.has(name)) return this.base;
    const adapter = this.loaded.get(name);
    if (adapter) return adapter.model;
    const names = [...this.loaded.keys()].map((key) => `"${key}"`).join(', ');
    throw new OpenAIHttpError(
      404,
      `The model "${name}" does not exist; this server serves "${this.baseName}"${names ? ` and the LoRA adapters ${names}` : ''}.`,
      'invalid_request_error',
      'model',
      'model_not_found',
    );
  }

  /** `POST /v1/load_lora_adapter`. */
  async load(text: string): Promise<Record<string, string>> {
    const body = parseOpenAIRequest(text, LoadLoraAdapterRequestSchema);
    if (this.baseNames.has(body.lora_name) || this.loaded.has(body.lora_name)) {
      throw new OpenAIHttpError(
        400,
        `The name "${body.lora_name}" is taken: unload the adapter of that name first, or choose another.`,
        'invalid_request_error',
        'lora_name',
      );
    }
    if (this.loaded.size >= this.maxAdapters) {
      throw new OpenAIHttpError(
        400,
        `${this.maxAdapters} LoRA adapters are loaded, the most this server holds (maxLoraAdapters): unload one first.`,
        'invalid_request_error',
        'lora_name',
      );
    }
    const file = adapterFile(body.lora_path);
    let model: LlamaChatModel;
    try {
      model = await this.base.withLoraAdapter(file);
    } catch (error) {
      throw new OpenAIHttpError(
        400,
        `Cannot load the LoRA adapter ${file}: ${(error as Error).message}`,
        'invalid_request_error',
        'lora_path',
      );
    }
    this.loaded.set(body.lora_name, {
      model,
      path: body.lora_path,
      created: Math.floor(Date.now() / 1000),
    });
    return { status: 'ok', lora_name: body.lora_name, lora_path: body.lora_path };
  }

  /** `POST /v1/unload_lora_adapter`. */
  async unload(text: string): Promise<Record<string, string>> {
    const body = parseOpenAIRequest(text, UnloadLoraAdapterRequestSchema);
    const adapter = this.loaded.get(body.lora_name);
    if (!adapter) {
      throw new OpenAIHttpError(
        404,
        `No LoRA adapter named "${body.lora_name}" is loaded.`,
        'invalid_request_error',
        'lora_name',
        'model_not_found',
      );
    }
    this.loaded.delete(body.lora_name);
    await adapter.model.dispose();
    return { status: 'ok', lora_name: body.lora_name };
  }

  /** The adapters as `GET /v1/models` entries. */
  modelEntries(): Array<Record<string, unknown>> {
    return [...this.loaded].map(([name, adapter]) => ({
      id: name,
      object: 'model',
      created: adapter.created,
      owned_by: 'dreamgym',
      root: adapter.path,
      parent: this.baseName,
    }));
  }

  /** Disposes every adapter's model (the base model is the caller's). */
  async disposeAll(): Promise<void> {
    for (const adapter of this.loaded.values()) await adapter.model.dispose();
    this.loaded.clear();
  }
}

/** A GGUF adapter file, or a folder holding one as `adapter.gguf` (PEFT folders the DreamGym trainer writes). */
function adapterFile(path: string): string {
  if (!existsSync(path)) {
    throw new OpenAIHttpError(
      400,
      `lora_path ${path} does not exist.`,
      'invalid_request_error',
      'lora_path',
    );
  }
  if (!statSync(path).isDirectory()) return path;
  const file = join(path, 'adapter.gguf');
  if (!existsSync(file)) {
    throw new OpenAIHttpError(
      400,
      `${path} holds no adapter.gguf: this server runs llama.cpp, which loads LoRA adapters as GGUF (the DreamGym trainer writes adapter.gguf beside adapter_model.safetensors; llama.cpp's convert_lora_to_gguf.py converts other PEFT adapters).`,
      'invalid_request_error',
      'lora_path',
    );
  }
  return file;
}
