// The group-commit helper the runtime writes run events, outcomes and job completions through.
import { describe, expect, it } from 'vitest';
import { Coalescer } from '../../../src/database/coalescer.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('Coalescer', () => {
  it('writes at once when idle, and together what arrives while a write is in flight', async () => {
    const batches: number[][] = [];
    const coalescer = new Coalescer<number, number>(async (items) => {
      batches.push(items);
      await tick();
      return items.map((item) => item * 10);
    });
    const results = await Promise.all([1, 2, 3, 4].map((item) => coalescer.add(item)));
    expect(results).toEqual([10, 20, 30, 40]);
    expect(batches).toEqual([[1], [2, 3, 4]]);
  });

  it('fails only the item the database refuses: a failed batch is retried item by item', async () => {
    const coalescer = new Coalescer<string>(async (items) => {
      await tick();
      if (items.includes('bad')) throw new Error('refused');
    });
    const first = coalescer.add('first');
    const outcomes = await Promise.allSettled(['a', 'bad', 'b'].map((item) => coalescer.add(item)));
    await first;
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });

  it('batches only items of one key, oldest key first, within the weight bound and in order', async () => {
    const batches: string[][] = [];
    const coalescer = new Coalescer<string>(
      async (items) => {
        batches.push(items);
        await tick();
      },
      { key: (item) => item[0]!, weight: (item) => Number(item.slice(1)), maxWeight: 5 },
    );
    // a1 is written at once; the rest wait and are grouped by their letter.
    await Promise.all(['a1', 'a2', 'b1', 'a2', 'a3', 'a1', 'b9', 'b1'].map((item) => coalescer.add(item)));
    expect(batches).toEqual([['a1'], ['a2', 'a2'], ['b1'], ['a3', 'a1'], ['b9'], ['b1']]);
  });
});
