import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { splitCount, uniqueTaskId } from './task-generator.js';

describe('splitCount', () => {
  it('spreads a count evenly, earlier parts getting the remainder', () => {
    expect(splitCount(5, 3)).toEqual([2, 2, 1]);
    expect(splitCount(6, 3)).toEqual([2, 2, 2]);
    expect(splitCount(2, 4)).toEqual([1, 1, 0, 0]);
    expect(splitCount(0, 2)).toEqual([0, 0]);
    expect(splitCount(3, 0)).toEqual([]);
    expect(() => splitCount(-1, 2)).toThrow(InvalidArgumentError);
    expect(() => splitCount(2, 1.5)).toThrow(InvalidArgumentError);
  });
});

describe('uniqueTaskId', () => {
  it('suffixes a taken id', () => {
    expect(uniqueTaskId('a', new Set())).toBe('a');
    expect(uniqueTaskId('a', new Set(['a']))).toBe('a~2');
    expect(uniqueTaskId('a', new Set(['a', 'a~2']))).toBe('a~3');
  });
});
