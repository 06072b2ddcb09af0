/**
 * The decode pool's worker thread (decode-pool.ts): reads the request bodies it is sent with the
 * receiver's own decoders and mapping and answers with the events, or with the decoder's error.
 */
import { parentPort } from 'node:worker_threads';
import { VigilError, errorMessage } from '../../errors.ts';
import { decodeAndMap } from './decode-pool.ts';
import type { DecodeRequest, DecodeAnswer } from './decode-pool.ts';

parentPort!.on('message', (m: DecodeRequest) => {
  let answer: DecodeAnswer;
  try {
    const body = Buffer.from(m.body.buffer, m.body.byteOffset, m.body.byteLength);
    const { forward, markers, nowMs } = m.options;
    answer = { id: m.id, body: decodeAndMap(m.encoding, m.signal, body, { forward, markers, now: () => nowMs }) };
  } catch (err) {
    answer =
      err instanceof VigilError
        ? { id: m.id, error: { code: err.code, message: err.message, transient: err.transient } }
        : { id: m.id, error: { message: errorMessage(err), stack: (err as Error | undefined)?.stack } };
  }
  parentPort!.postMessage(answer);
});
