// Group commit for hot statements: items that arrive while a batch is being written go out together
// in the next one. An idle coalescer writes at once (no added latency); a busy one turns N round trips
// and N transactions into one, which is where PostgreSQL and the pg client spend their CPU.

type Pending<T, R> = { item: T; resolve: (result: R) => void; reject: (error: unknown) => void };

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
    private readonly options: { maxInFlight?: number; maxBatch?: number } = {},
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.next();
    });
  }

  private next(): void {
    while (this.pending.length && this.inFlight < (this.options.maxInFlight ?? 1)) {
      const batch = this.pending.splice(0, this.options.maxBatch ?? this.pending.length);
      this.inFlight++;
      void this.writeBatch(batch).finally(() => {
        this.inFlight--;
        this.next();
      });
    }
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
