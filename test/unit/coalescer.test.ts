// The group-commit helper the runtime writes run events, outcomes and job completions through.
import { describe, expect, it } from 'vitest';
import { Coalescer } from '../../src/database/coalescer.js';

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
});
