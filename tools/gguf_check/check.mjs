// llama.cpp as a reference for lmzoo's GGUF files (issue 42): loads MODEL.gguf with node-llama-cpp's prebuilt
// llama.cpp (CPU), tokenizes texts, greedily continues prompts given as token ids, and reads the metadata again with
// @huggingface/gguf. Prints one JSON object on stdout.
// Usage: node tools/gguf_check/check.mjs REQUEST.json
//   REQUEST: {"model": "m.gguf", "texts": ["..."], "special": true, "prompts": [[ids]], "n": 32, "top": 5,
//             "top_steps": 4, "kv_cache": "F32"}   special: control tokens written in the texts become their ids (Hugging Face's way)
// Packages: $LMZOO_GGUF_CHECK, else ${LMZOO_NPM_CACHE:-$HOME/.cache/lmzoo/npm}/gguf_check (tools/fetch_gguf_check.sh).
import {readFileSync} from "node:fs";
import {join} from "node:path";
import {homedir} from "node:os";
import {pathToFileURL} from "node:url";

const dir = process.env.LMZOO_GGUF_CHECK ||
    join(process.env.LMZOO_NPM_CACHE || join(homedir(), ".cache", "lmzoo", "npm"), "gguf_check");
const load = (p) => import(pathToFileURL(join(dir, "node_modules", p)).href);
const {getLlama, LlamaLogLevel} = await load("node-llama-cpp/dist/index.js");
const {gguf} = await load("@huggingface/gguf/dist/index.mjs");

const request = JSON.parse(readFileSync(process.argv[2], "utf8"));
const n = request.n ?? 32, topN = request.top ?? 5, topSteps = request.top_steps ?? 4;
const out = {model: request.model};

// Second opinion on the file: @huggingface/gguf's parser.
const parsed = await gguf(request.model, {allowLocalFile: true});
const meta = {};
for (const [k, v] of Object.entries(parsed.metadata)) {
  if (Array.isArray(v)) meta[k] = {length: v.length, head: v.slice(0, 3)};
  else meta[k] = typeof v === "bigint" ? Number(v) : v;
}
out.metadata = meta;
out.tensors = parsed.tensorInfos.map((t) => ({name: t.name, shape: t.shape.map(Number), dtype: t.dtype}));

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: request.model});
out.tokens = (request.texts ?? []).map((t) => Array.from(model.tokenize(t, request.special ?? false)));

const threads = Number(process.env.LMZOO_GGUF_THREADS || 2);
// The KV cache in f32 (llama.cpp's default is f16, which rounds keys and values that lmzoo keeps in f32).
const kv = request.kv_cache ?? "F32";
const context = await model.createContext({contextSize: request.context ?? 256, threads, sequences: 1,
  flashAttention: false, experimentalKvCacheKeyType: kv, experimentalKvCacheValueType: kv});
const sequence = context.getSequence();
out.greedy = [];
let generated = 0, seconds = 0;
for (const prompt of request.prompts ?? []) {
  await sequence.clearHistory();
  // Greedy, step by step: each step evaluates the last token and asks for the next one's full distribution.
  const tokens = [];
  let input = prompt.slice(0, -1);
  let last = prompt[prompt.length - 1];
  if (input.length > 0) await sequence.evaluateWithoutGeneratingNewTokens(input);
  const start = process.hrtime.bigint();
  for (let step = 0; step < n; ++step) {
    const [result] = await sequence.controlledEvaluate([[last, {generateNext: {token: true, options: {temperature: 0}}}]]);
    const next = result.next.token;
    tokens.push(next);
    last = next;
  }
  seconds += Number(process.hrtime.bigint() - start) / 1e9;
  generated += n;
  out.greedy.push(tokens);
}
out.top = [];
// Log-probabilities of the top tokens at the first steps (temperature 1, no filters).
for (const prompt of request.prompts ?? []) {
  await sequence.clearHistory();
  const steps = [];
  let ids = prompt.slice();
  if (ids.length > 1) await sequence.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  let last = ids[ids.length - 1];
  for (let step = 0; step < topSteps; ++step) {
    const [result] = await sequence.controlledEvaluate([[last, {generateNext: {
      probabilities: true, options: {temperature: 1, topK: 0, topP: 1, minP: 0}}}]]);
    const probs = Array.from(result.next.probabilities.entries()).slice(0, topN);
    steps.push(probs.map(([id, p]) => [id, Math.log(p)]));
    last = probs[0][0];
  }
  out.top.push(steps);
}
out.tokens_per_second = seconds > 0 ? generated / seconds : null;
await context.dispose();
await model.dispose();
console.log(JSON.stringify(out));
