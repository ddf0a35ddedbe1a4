/**
 * Errors of the browser package. Grammar errors are core's `ActionParseError`; configuration
 * errors core's `ConfigError`; a browser that cannot start or crashed an `EnvironmentError`.
 */
import { EnvironmentError } from '@dreamgym/core';

/**
 * A well-formed web action that could not be carried out on the page: its element id is
 * not in the current observation, the element is gone or cannot take the action, a URL
 * does not load, a tab index does not exist. The browser environment answers it in the
 * observation (`info.actionError`), as a real browser would, instead of throwing.
 */
export class WebActionError extends EnvironmentError {
  /** The action as given. */
  readonly action: string;
  constructor(message: string, options: { action: string; cause?: unknown }) {
    super(message, options);
    this.name = 'WebActionError';
    this.action = options.action;
  }

  /** True for a `WebActionError`, also one thrown by another copy of this package. */
  static override isInstance = (error: unknown): error is WebActionError =>
    EnvironmentError.isInstance(error) && (error as Error).name === 'WebActionError';
}
