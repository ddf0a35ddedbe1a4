/**
 * Carrying out web actions on a live page. An element id resolves to its DOM node through
 * the CDP session and backend node id that the observation recorded; the node is marked for
 * a moment so Playwright's locator (which waits for the element to be visible, stable and
 * enabled, scrolls it into view, and pierces open shadow roots) can act on it in its frame.
 */
import type { CDPSession, Frame, Locator, Page } from 'playwright-core';
import type { PageSessions } from '../axtree/accessibility-snapshot.js';
import type { ObservedElement } from '../axtree/element-ids.js';
import { WebActionError } from '../errors.js';
import { formatWebAction, type WebAction } from './web-action-grammar.js';

/** What an action needs from the environment. */
export interface WebActionContext {
  /** The current tab. */
  page: Page;
  /** The current tab's CDP sessions (the ones its observation was captured with). */
  sessions: PageSessions;
  /** The elements of the last observation, by id. */
  elements: ReadonlyMap<number, ObservedElement>;
  /** Milliseconds an element action waits for its element to be ready. */
  actionTimeoutMs: number;
  /** Milliseconds a navigation (`goto`, `go_back`, `go_forward`) may take. */
  navigationTimeoutMs: number;
  /**
   * How `type` enters text: `keyboard` clears the field and types key by key (pages that
   * listen to keys, such as autocompletes, see every key), `fill` sets the value at once.
   */
  typing: 'keyboard' | 'fill';
}

/** What happened, when the action did something worth telling. */
export interface WebActionOutcome {
  /** A remark for the agent (no page to go back to, ...). */
  note?: string;
}

const MARKER = 'data-dreamgym-target';

interface ElementDescription {
  tag: string;
  /** For an `<option>`: its label, and whether its `<select>` was marked instead. */
  optionLabel?: string;
  selectMarked?: boolean;
  editable: boolean;
  /** A link or form that opens its target in another window (`target=_blank`). */
  opensWindow: boolean;
  /** A link to another document in the same window. */
  navigates: boolean;
}

const MARK_FUNCTION = `function (marker, token) {
  let target = this;
  const description = { tag: this.nodeName.toLowerCase(), editable: false };
  if (description.tag === 'option') {
    const select = this.closest('select');
    if (select) {
      description.optionLabel = (this.label || this.textContent || '').trim();
      description.selectMarked = true;
      target = select;
    }
  }
  if (target.nodeType !== 1) return null;
  description.editable = target.isContentEditable ||
    ['input', 'textarea', 'select'].includes(target.nodeName.toLowerCase());
  const opener = target.closest('a[target], area[target]') || (target.form && target.form.getAttribute('target') ? target.form : null);
  const windowName = opener ? (opener.getAttribute('target') || '').toLowerCase() : '';
  description.opensWindow = windowName !== '' && !['_self', '_parent', '_top'].includes(windowName);
  const link = target.closest('a[href]');
  description.navigates = false;
  if (link && !description.opensWindow && !link.hasAttribute('download')) {
    const url = new URL(link.href, location.href);
    description.navigates = url.protocol.startsWith('http') && url.href.split('#')[0] !== location.href.split('#')[0];
  }
  target.setAttribute(marker, token);
  return description;
}`;

const UNMARK_FUNCTION = `function (marker) {
  const target = this.nodeName && this.nodeName.toLowerCase() === 'option' && this.closest('select') ? this.closest('select') : this;
  if (target.removeAttribute) target.removeAttribute(marker);
}`;

let tokenCounter = 0;

/** The frame whose document holds the marked node. */
async function frameWithMarker(page: Page, selector: string): Promise<Frame | undefined> {
  const frames = page.frames();
  const counts = await Promise.all(
    frames.map((frame) =>
      frame
        .locator(selector)
        .count()
        .catch(() => 0),
    ),
  );
  const index = counts.findIndex((count) => count > 0);
  return index < 0 ? undefined : frames[index];
}

/**
 * Resolves `id` to its element, runs `body` with a locator for it, and removes the mark
 * again whatever happens.
 */
async function withElement<T>(
  context: WebActionContext,
  action: WebAction,
  id: number,
  body: (locator: Locator, description: ElementDescription) => Promise<T>,
): Promise<T> {
  const text = formatWebAction(action);
  const element = context.elements.get(id);
  if (!element) {
    throw new WebActionError(
      `There is no element [${id}] on the current page: use an id from the latest observation.`,
      { action: text },
    );
  }
  const session: CDPSession | undefined = await context.sessions.byName(element.session);
  let objectId: string | undefined;
  try {
    const resolved = await session?.send('DOM.resolveNode', {
      backendNodeId: element.backendNodeId,
    });
    objectId = resolved?.object.objectId;
  } catch {
    objectId = undefined;
  }
  if (!session || objectId === undefined) {
    throw new WebActionError(
      `Element [${id}] (${element.role} '${element.name}') is no longer on the page: it was removed or the page changed.`,
      { action: text },
    );
  }
  tokenCounter += 1;
  const token = `${process.pid}-${tokenCounter}`;
  try {
    const marked = await session.send('Runtime.callFunctionOn', {
      objectId,
      functionDeclaration: MARK_FUNCTION,
      arguments: [{ value: MARKER }, { value: token }],
      returnByValue: true,
    });
    const description = marked.result.value as ElementDescription | null;
    if (!description) {
      throw new WebActionError(
        `Element [${id}] (${element.role} '${element.name}') cannot be acted on.`,
        {
          action: text,
        },
      );
    }
    const selector = `[${MARKER}="${token}"]`;
    const frame = await frameWithMarker(context.page, selector);
    if (!frame) {
      throw new WebActionError(
        `Element [${id}] (${element.role} '${element.name}') is not reachable (a closed shadow root or a detached frame).`,
        { action: text },
      );
    }
    return await body(frame.locator(selector).first(), description);
  } finally {
    await session
      .send('Runtime.callFunctionOn', {
        objectId,
        functionDeclaration: UNMARK_FUNCTION,
        arguments: [{ value: MARKER }],
      })
      .catch(() => undefined);
    await session.send('Runtime.releaseObject', { objectId }).catch(() => undefined);
  }
}

function firstLine(error: unknown): string {
  return ((error as Error).message ?? String(error)).split('\n')[0]!.replace(/^\w+\.\w+: /, '');
}

/**
 * Why a pointer cannot reach the element, or undefined when it can: no size on the page (a
 * link around an image that did not load, a collapsed widget), or a place outside the page
 * that no scrolling reaches (the visually-hidden pattern `top: -1000px`, `left: -9999px`).
 */
async function unreachableReason(locator: Locator): Promise<string | undefined> {
  const box = await locator.boundingBox().catch(() => null);
  if (!box || box.width < 1 || box.height < 1) return 'it has no size on the page';
  const outside = await locator
    .evaluate((element) => {
      const rect = element.getBoundingClientRect();
      const view = element.ownerDocument.defaultView!;
      return rect.right + view.scrollX <= 0 || rect.bottom + view.scrollY <= 0;
    })
    .catch(() => false);
  return outside ? 'it lies outside the page, where no scrolling reaches' : undefined;
}

/**
 * Runs a Playwright element call. An element a pointer cannot reach (see
 * {@link unreachableReason}) is acted on at once by script instead (`scripted`: the DOM's own
 * `click()`, or the hover's mouse events), as assistive technology does, rather than after the
 * action timeout; the outcome says so. A reachable element that is covered, moving or never
 * settles is retried with `force` (a click on its spot, as a user clicking there would). A
 * disabled element fails at once: a user's click would do nothing either.
 */
async function withForceFallback(
  locator: Locator,
  attempt: (force: boolean) => Promise<void>,
  action: WebAction,
  scripted: () => Promise<void>,
): Promise<string | undefined> {
  const text = formatWebAction(action);
  if (await locator.isDisabled().catch(() => false)) {
    throw new WebActionError(`${text} failed: the element is disabled.`, { action: text });
  }
  const unreachable = await unreachableReason(locator);
  if (unreachable !== undefined) {
    try {
      await scripted();
    } catch (error) {
      throw new WebActionError(`${text} failed: ${unreachable}, and ${firstLine(error)}`, {
        action: text,
        cause: error,
      });
    }
    return `${text} was done by script: ${unreachable}.`;
  }
  try {
    await attempt(false);
  } catch (first) {
    try {
      await attempt(true);
    } catch {
      throw new WebActionError(`${text} failed: ${firstLine(first)}`, {
        action: text,
        cause: first,
      });
    }
  }
  return undefined;
}

/** A click event sent to the element itself: activates links and buttons wherever the element is. */
const scriptClick = (locator: Locator) => () => locator.dispatchEvent('click');

/** The mouse events of a hover, sent to the element itself. */
const scriptHover = (locator: Locator) => async () => {
  for (const type of ['mouseover', 'mouseenter', 'mousemove']) await locator.dispatchEvent(type);
};

/**
 * Executes an element or page action (`click`, `hover`, `type`, `press`, `scroll`, `goto`,
 * `go_back`, `go_forward`) on the current tab. Tab actions and `stop` belong to the
 * environment.
 *
 * @throws WebActionError when the action cannot be carried out (unknown id, element gone,
 * URL that does not load).
 */
export async function executeWebAction(
  action: WebAction,
  context: WebActionContext,
): Promise<WebActionOutcome> {
  const { page } = context;
  const timeout = context.actionTimeoutMs;
  switch (action.type) {
    case 'click': {
      const note = await withElement(context, action, action.id, async (locator, description) => {
        if (description.selectMarked && description.optionLabel !== undefined) {
          await locator.selectOption({ label: description.optionLabel }, { timeout });
          return undefined;
        }
        // A new window opens a moment after the click: wait for it, so the next observation
        // shows the tab it opened.
        const popup = description.opensWindow
          ? page
              .context()
              .waitForEvent('page', { timeout: context.navigationTimeoutMs })
              .catch(() => undefined)
          : undefined;
        // A link's navigation starts a moment after the click too; a script may cancel it,
        // so the wait for it to start is short.
        const navigation = description.navigates
          ? page
              .waitForEvent('framenavigated', {
                timeout: Math.min(2_000, context.navigationTimeoutMs),
              })
              .catch(() => undefined)
          : undefined;
        const done = await withForceFallback(
          locator,
          (force) => locator.click({ timeout, force }),
          action,
          scriptClick(locator),
        );
        const [opened] = await Promise.all([popup, navigation]);
        await opened
          ?.waitForLoadState('load', { timeout: context.navigationTimeoutMs })
          .catch(() => undefined);
        return done;
      });
      return note === undefined ? {} : { note };
    }
    case 'hover': {
      const note = await withElement(context, action, action.id, (locator) =>
        withForceFallback(
          locator,
          (force) => locator.hover({ timeout, force }),
          action,
          scriptHover(locator),
        ),
      );
      return note === undefined ? {} : { note };
    }
    case 'type':
      await withElement(context, action, action.id, async (locator, description) => {
        try {
          if (description.tag === 'select' && !description.selectMarked) {
            await locator
              .selectOption({ label: action.text }, { timeout })
              .catch(() => locator.selectOption(action.text, { timeout }));
          } else if (description.editable) {
            await locator.fill(context.typing === 'fill' ? action.text : '', { timeout });
            if (context.typing === 'keyboard')
              await locator.pressSequentially(action.text, { timeout });
          } else {
            // An element that is not a form field (a custom widget): click it and type, as a user would.
            await withForceFallback(
              locator,
              (force) => locator.click({ timeout, force }),
              action,
              scriptClick(locator),
            );
            await page.keyboard.type(action.text);
          }
          if (action.pressEnter) await page.keyboard.press('Enter');
        } catch (error) {
          if (WebActionError.isInstance(error)) throw error;
          throw new WebActionError(`${formatWebAction(action)} failed: ${firstLine(error)}`, {
            action: formatWebAction(action),
            cause: error,
          });
        }
      });
      return {};
    case 'press':
      try {
        await page.keyboard.press(action.keys);
      } catch (error) {
        throw new WebActionError(`press [${action.keys}] failed: ${firstLine(error)}`, {
          action: formatWebAction(action),
          cause: error,
        });
      }
      return {};
    case 'scroll':
      await page.evaluate(
        `window.scrollBy({ top: ${action.direction === 'down' ? 1 : -1} * window.innerHeight * 0.8, behavior: 'instant' })`,
      );
      return {};
    case 'goto': {
      let url: string;
      try {
        url = new URL(action.url, page.url() === 'about:blank' ? undefined : page.url()).href;
      } catch {
        throw new WebActionError(
          `goto [${action.url}]: not a URL (write it with its scheme, e.g. http://host/path).`,
          {
            action: formatWebAction(action),
          },
        );
      }
      try {
        await page.goto(url, { timeout: context.navigationTimeoutMs, waitUntil: 'load' });
      } catch (error) {
        throw new WebActionError(`goto [${url}] failed: ${firstLine(error)}`, {
          action: formatWebAction(action),
          cause: error,
        });
      }
      return {};
    }
    case 'go_back':
    case 'go_forward': {
      const before = page.url();
      const navigation =
        action.type === 'go_back'
          ? page.goBack({ timeout: context.navigationTimeoutMs, waitUntil: 'load' })
          : page.goForward({ timeout: context.navigationTimeoutMs, waitUntil: 'load' });
      const response = await navigation.catch((error: unknown) => {
        throw new WebActionError(`${action.type} failed: ${firstLine(error)}`, {
          action: action.type,
          cause: error,
        });
      });
      // Playwright answers null both for history without an entry and for same-document moves.
      if (response === null && page.url() === before) {
        return {
          note: `${action.type}: there is no ${action.type === 'go_back' ? 'previous' : 'next'} page in this tab's history.`,
        };
      }
      return {};
    }
    default:
      throw new WebActionError(`${formatWebAction(action)} is not a page action.`, {
        action: formatWebAction(action),
      });
  }
}
