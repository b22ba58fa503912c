// Hugging Face tokenizers' throughput on the same text as bench_tokenizer: one line at a time,
// and encodeBatch (Rust threads; RAYON_NUM_THREADS sets how many).
//   node bench_tokenizer.mjs VOCAB TEXT [seconds] [cased]
import fs from 'fs';
import { bertTokenizer } from './bert_pipeline.mjs';

const [vocab, textPath, secondsArg, casedArg] = process.argv.slice(2);
const budget = Number(secondsArg ?? 3);
const t = await bertTokenizer(vocab, { cased: casedArg === 'cased' });
const lines = fs.readFileSync(textPath, 'utf8').split('\n').filter((l) => l.length > 0);
const mb = lines.reduce((s, l) => s + Buffer.byteLength(l, 'utf8') + 1, 0) / 1e6;
async function rate(pass) {
  await pass();
  let passes = 0;
  const t0 = process.hrtime.bigint();
  let secs = 0;
  do {
    await pass();
    ++passes;
    secs = Number(process.hrtime.bigint() - t0) / 1e9;
  } while (secs < budget);
  return (mb * passes) / secs;
}
const one = await rate(async () => { for (const l of lines) await t.encode(l); });
const batch = await rate(async () => { await t.encodeBatch(lines); });
console.log(`MB/s 1 line at a time: ${one.toFixed(2)}`);
console.log(`MB/s encodeBatch (RAYON_NUM_THREADS=${process.env.RAYON_NUM_THREADS ?? 'all'}): ${batch.toFixed(2)}`);
