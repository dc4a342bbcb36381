// Times the exported `run` of WebAssembly kernels in Node's V8, the way SupervisionBench times them
// on Chicory: a fresh instance of the once-compiled module per run (so memory starts zeroed),
// a few warm-up runs, then the median of the measured runs.
//
//   node run-kernel.mjs [--warmup N] [--runs N] [--chicory jmh-result.json] kernel.wasm...
//
// With --chicory, the JMH JSON result of SupervisionBench.bare (ms/op, param `kernel`) is read and
// Chicory/V8 is printed per kernel with the geometric mean.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';

const args = process.argv.slice(2);
let warmup = 3;
let runs = 7;
let chicoryJson = null;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--warmup') warmup = Number(args[++i]);
  else if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--chicory') chicoryJson = args[++i];
  else files.push(args[i]);
}
if (files.length === 0) {
  console.error('usage: node run-kernel.mjs [--warmup N] [--runs N] [--chicory jmh.json] k.wasm...');
  process.exit(2);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timeKernel(file) {
  const module = await WebAssembly.compile(readFileSync(file));
  const times = [];
  let check = null;
  for (let i = 0; i < warmup + runs; i++) {
    const instance = await WebAssembly.instantiate(module, {});
    const t0 = process.hrtime.bigint();
    const rc = instance.exports.run();
    const t1 = process.hrtime.bigint();
    if (rc !== 0) throw new Error(`${file}: run returned ${rc}`);
    check = instance.exports.check() >>> 0;
    if (i >= warmup) times.push(Number(t1 - t0) / 1e6);
  }
  return { kernel: basename(file, '.wasm'), v8Ms: median(times), check };
}

function chicoryTimes(path) {
  const out = new Map();
  for (const r of JSON.parse(readFileSync(path, 'utf8'))) {
    if (!r.benchmark.endsWith('.bare') || !r.params || !r.params.kernel) continue;
    const unit = r.primaryMetric.scoreUnit;
    const scale = unit === 'ms/op' ? 1 : unit === 'us/op' ? 1e-3 : unit === 'ns/op' ? 1e-6 : NaN;
    out.set(r.params.kernel, r.primaryMetric.score * scale);
  }
  return out;
}

const results = [];
for (const f of files) results.push(await timeKernel(f));

if (!chicoryJson) {
  for (const r of results) {
    console.log(`${r.kernel.padEnd(10)} V8 ${r.v8Ms.toFixed(1).padStart(8)} ms  check=${r.check}`);
  }
} else {
  const chicory = chicoryTimes(chicoryJson);
  console.log('kernel       Chicory ms    V8 ms   Chicory/V8');
  let logSum = 0;
  let n = 0;
  for (const r of results) {
    const c = chicory.get(r.kernel);
    if (c === undefined) {
      console.log(`${r.kernel.padEnd(10)} (no Chicory figure in ${chicoryJson})`);
      continue;
    }
    const ratio = c / r.v8Ms;
    logSum += Math.log(ratio);
    n++;
    console.log(
      `${r.kernel.padEnd(10)} ${c.toFixed(1).padStart(10)} ${r.v8Ms.toFixed(1).padStart(9)}` +
        `   ${ratio.toFixed(2).padStart(6)}x`,
    );
  }
  if (n > 0) console.log(`geometric mean                      ${Math.exp(logSum / n).toFixed(2).padStart(6)}x`);
}
