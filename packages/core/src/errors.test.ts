import { describe, expect, it } from 'vitest';
import {
  ActionParseError,
  ConfigError,
  DatasetFormatError,
  DreamGymError,
  ModelError,
} from './errors.js';

describe('DreamGymError', () => {
  it('carries a code and formats dataset locations', () => {
    const error = new DatasetFormatError('expected number', {
      file: 'data/t.jsonl',
      line: 12,
      field: 'steps.0.reward',
    });
    expect(error.code).toBe('DATASET_FORMAT');
    expect(error.name).toBe('DatasetFormatError');
    expect(error.message).toBe('data/t.jsonl:12 (field `steps.0.reward`): expected number');
    expect(error).toBeInstanceOf(DreamGymError);
    expect(error).toBeInstanceOf(Error);
  });

  it('isInstance works across two separately loaded copies of the module', async () => {
    // A second module instance stands for a second install of @dreamgym/core.
    // @ts-expect-error: the query suffix makes vite load a fresh instance of the same file.
    const copy = (await import('./errors.js?second-copy')) as typeof import('./errors.js');
    expect(copy.DreamGymError).not.toBe(DreamGymError);
    const foreign = new copy.ActionParseError('"fly" is not an action', { action: 'fly' });
    expect(foreign instanceof ActionParseError).toBe(false);
    expect(DreamGymError.isInstance(foreign)).toBe(true);
    expect(ActionParseError.isInstance(foreign)).toBe(true);
    expect(ConfigError.isInstance(foreign)).toBe(false);
  });

  it('isInstance rejects look-alikes', () => {
    expect(DreamGymError.isInstance(new Error('x'))).toBe(false);
    expect(DreamGymError.isInstance({ code: 'MODEL' })).toBe(false);
    expect(DreamGymError.isInstance(null)).toBe(false);
    expect(ModelError.isInstance(new ModelError('down', { status: 503, url: 'http://x' }))).toBe(
      true,
    );
  });
});
