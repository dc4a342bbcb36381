// One WASI command under Node's node:wasi, timed the way issue 16 compares it with the daemon:
// read, compile, instantiate and run the module once, in this process, and print on stderr the
// milliseconds that took (and nothing else there, so a caller can parse it). The guest's stdout
// and stderr pass through; the exit code is the guest's.
//
//   node run-wasi.mjs [--dir HOST_DIR] [--stdin FILE] MODULE.wasm [ARG...]
//
// --dir preopens HOST_DIR as "/" (as the daemon preopens a run's storage root); --stdin gives the
// guest FILE as its standard input (default: empty).
import { WASI } from 'node:wasi';
import { readFileSync, openSync, closeSync } from 'node:fs';
import { basename } from 'node:path';
import process from 'node:process';

const argv = process.argv.slice(2);
let dir = null;
let stdinFile = '/dev/null';
while (argv[0]?.startsWith('--')) {
  const flag = argv.shift();
  if (flag === '--dir') dir = argv.shift();
  else if (flag === '--stdin') stdinFile = argv.shift();
  else throw new Error(`unknown flag ${flag}`);
}
const [file, ...args] = argv;
const stdin = openSync(stdinFile, 'r');
const t0 = process.hrtime.bigint();
const wasi = new WASI({
  version: 'preview1',
  args: [basename(file), ...args],
  env: {},
  preopens: dir ? { '/': dir } : {},
  stdin,
  returnOnExit: true,
});
const module = await WebAssembly.compile(readFileSync(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
const code = wasi.start(instance);
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
closeSync(stdin);
process.stderr.write(`node-wasi-ms ${ms.toFixed(2)}\n`);
process.exitCode = code;
