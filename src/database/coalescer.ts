// Group commit for hot statements: items that arrive while a batch is being written go out together
// in the next one. An idle coalescer writes at once (no added latency); a busy one turns N round trips
// and N transactions into one, which is where PostgreSQL and the pg client spend their CPU.

type Pending<T, R> = { item: T; resolve: (result: R) => void; reject: (error: unknown) => void };

export type CoalescerOptions<T> = {
  /** Batches being written at once (1). */
  maxInFlight?: number;
  /** Items per batch at most (all that wait). */
  maxBatch?: number;
  /** Items of one key only go together (a statement's shared parameters); batches take the oldest waiting key first. */
  key?: (item: T) => string;
  /** A batch's items weigh at most `maxWeight` together (rows, say), unless one item alone weighs more. */
  weight?: (item: T) => number;
  maxWeight?: number;
};

export class Coalescer<T, R = void> {
  private pending: Pending<T, R>[] = [];
  private inFlight = 0;

  /**
   * `write` receives each batch in arrival order and returns one result per item (or nothing, when
   * R is void). When a batch of several fails, each item is retried alone, so one bad item (a value
   * the database refuses) fails only its own caller.
   */
  constructor(
    private readonly write: (items: T[]) => Promise<R[] | void>,
    private readonly options: CoalescerOptions<T> = {},
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.pending.length && this.inFlight < (this.options.maxInFlight ?? 1)) {
      const batch = this.takeBatch();
      this.inFlight++;
      void this.writeBatch(batch).finally(() => {
        this.inFlight--;
        this.next();
      });
    }
  }

  /** The oldest waiting item and those after it of its key, in order, while they fit the batch's bounds. */
  private takeBatch(): Pending<T, R>[] {
    const { maxBatch = Infinity, key, weight, maxWeight = Infinity } = this.options;
    const group = key?.(this.pending[0]!.item);
    const batch: Pending<T, R>[] = [];
    let weighed = 0;
    let full = false;
    this.pending = this.pending.filter((entry) => {
      if (full || (key && key(entry.item) !== group)) return true;
      const itemWeight = weight?.(entry.item) ?? 0;
      // Full once an item does not fit: later items of the key wait too, so a key's items keep their order.
      if (batch.length && (batch.length >= maxBatch || weighed + itemWeight > maxWeight)) {
        full = true;
        return true;
      }
      batch.push(entry);
      weighed += itemWeight;
      return false;
    });
    return batch;
  }

  private async writeBatch(batch: Pending<T, R>[]): Promise<void> {
    try {
      const results = await this.write(batch.map((entry) => entry.item));
      batch.forEach((entry, i) => entry.resolve((results ? results[i] : undefined) as R));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.reject(error);
      for (const entry of batch) await this.writeBatch([entry]);
    }
  }
}
