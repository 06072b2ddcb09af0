/**
 * The memory store's logs and outboxes are Fifo queues: every sequence of pushes, trims and reads
 * must see what a plain array trimmed with `splice(0, n)` sees (the model), across the compactions
 * a long queue goes through.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Fifo } from '../src/store/fifo.ts';
import { seededRandom, testSeed } from './helpers/random.ts';

test('a Fifo reads as an array trimmed from the front (seeded random operations)', () => {
  const random = seededRandom(1);
  const int = (n: number) => Math.floor(random() * n);
  for (let round = 0; round < 20; round++) {
    const fifo = new Fifo<number>();
    const model: number[] = [];
    let next = 0;
    for (let op = 0; op < 2000; op++) {
      const at = `seed ${testSeed()}, round ${round}, operation ${op}`;
      const r = random();
      if (r < 0.45) {
        // Bursts, so that the queue grows past the compaction threshold.
        for (let k = int(400); k > 0; k--) {
          fifo.push(next);
          model.push(next++);
        }
      } else if (r < 0.75) {
        const bound = (model[0] ?? next) + int(600);
        const dropped = fifo.dropWhile((x) => x < bound);
        let n = 0;
        while (n < model.length && model[n]! < bound) n++;
        model.splice(0, n);
        assert.equal(dropped, n, at);
      } else if (r < 0.9) {
        const n = int(700) - 50;
        assert.deepEqual(fifo.first(n), model.slice(0, Math.max(0, n)), at);
      } else {
        const i = int(model.length + 3) - 1;
        assert.equal(fifo.at(i), i >= 0 ? model[i] : undefined, at);
      }
      assert.equal(fifo.length, model.length, at);
    }
    assert.deepEqual([...fifo], model);
  }
});
