/**
 * `CachingRetriever`: the replay buffer's top-k search, remembered between write-backs.
 *
 * A served run's episodes repeat themselves: each drawn task is played `rolloutsPerTask`
 * times in a row (a GRPO group), from the same initial state, and clients often take the
 * same first actions. Between two write-back batches the buffer does not change, so the
 * same query has the same answer: it is searched once. Each applied batch starts a new
 * generation and empties the cache, so an answer is never older than the buffer it came from.
 */
import type {
  RetrievalFilter,
  RetrievalQuery,
  ScoredTransition,
  TransitionRetriever,
} from '@dreamgym/core/replay';

/** Options of {@link CachingRetriever}. */
export interface CachingRetrieverOptions {
  /** Most answers kept; when full, the cache starts over (default 8192; 0: keep none, only count). */
  maxEntries?: number;
}

/** What the cache has done, for `/dreamgym/status` and the benchmark. */
export interface RetrievalStats {
  /** Searches asked for. */
  lookups: number;
  /** Of them, answered from the cache. */
  hits: number;
  /** Milliseconds spent in the searches that were not (the wrapped retriever's time). */
  searchMilliseconds: number;
}

/** Remembers a retriever's answers until {@link CachingRetriever.invalidate}. */
export class CachingRetriever implements TransitionRetriever {
  private readonly maxEntries: number;
  private readonly answers = new Map<string, Promise<ScoredTransition[]>>();
  private generation = 0;
  private readonly figures: RetrievalStats = { lookups: 0, hits: 0, searchMilliseconds: 0 };

  constructor(
    private readonly inner: TransitionRetriever,
    options: CachingRetrieverOptions = {},
  ) {
    this.maxEntries = options.maxEntries ?? 8192;
  }

  search(query: RetrievalQuery, k: number, filter?: RetrievalFilter): Promise<ScoredTransition[]> {
    this.figures.lookups += 1;
    const key = cacheKey(query, k, filter);
    const known = this.answers.get(key);
    if (known) {
      this.figures.hits += 1;
      return known;
    }
    const generation = this.generation;
    const started = performance.now();
    const answer = this.inner.search(query, k, filter);
    void answer.then(
      () => {
        this.figures.searchMilliseconds += performance.now() - started;
      },
      // A failed search is not remembered: the next query tries again.
      () => {
        if (this.answers.get(key) === answer) this.answers.delete(key);
      },
    );
    if (generation === this.generation && this.maxEntries > 0) {
      if (this.answers.size >= this.maxEntries) this.answers.clear();
      this.answers.set(key, answer);
    }
    return answer;
  }

  /** Forgets every answer: call after the buffer has changed. */
  invalidate(): void {
    this.generation += 1;
    this.answers.clear();
  }

  /** Lookups, hits and search time so far. */
  stats(): RetrievalStats {
    return { ...this.figures };
  }
}

/** One string that differs whenever the search could answer differently. */
function cacheKey(query: RetrievalQuery, k: number, filter: RetrievalFilter | undefined): string {
  const parts = [String(k), query.state.text, query.action, query.instruction ?? '\u0001'];
  if (filter) parts.push(JSON.stringify(filter));
  return parts.join('\u0000');
}
