// Runs greedy generation in llama.cpp (npm node-llama-cpp, CPU, one thread) on GGUF files and
// compares it with Quantscope's greedy generation (`quantscope-cli generate --json`) of the same
// weights; prints a table and exits 1 on any disagreement. scripts/check-gguf.sh prepares the
// files and Quantscope's side and explains what is compared; this file is the llama.cpp side
// and the verdict.
//
//   node check-gguf.mjs CASES.json
//
// CASES.json: {"max_new_tokens": N, "cases": [{"label", "file" (the .gguf llama.cpp runs),
// "mode" ("exact" or "quantized"), "reference_dir" (a Hugging Face checkpoint holding the same
// weights in fp32, for the diagnosis of a quantized case), "prompt", "quantscope" (the JSON of
// `quantscope-cli generate --json`: prompt_ids, new_ids, text)}]}.
// LLAMA_MODULES names the node_modules folder holding node-llama-cpp. LLAMA_KV_TYPE sets the KV
// cache type (default F32, the engine's precision; F16 is llama.cpp's default).
// CHECK_GGUF_MEASURE=1 adds, per case, the largest difference between the engines' top-two
// margins over the generated steps (docs/exporters.md's table; seconds per case, so not by
// default). CHECK_GGUF_VERBOSE=1 prints llama.cpp's texts.
//
// Verdict per case: the prompt's token ids (BOS included) must be equal, and the generated ids
// and text. A quantized case whose ids differ first at step k passes only when that step is
// shown to be the rounding of llama.cpp's activations (check-gguf.sh): along Quantscope's ids,
// the reference forward on the same weights picks Quantscope's token at k, and the same forward
// with its quantized matmuls' inputs rounded to Q8_0 as ggml does picks llama.cpp's token.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const [casesPath] = process.argv.slice(2);
if (!casesPath) {
  console.error("usage: node check-gguf.mjs CASES.json");
  process.exit(2);
}
const modules = process.env.LLAMA_MODULES;
if (!modules) {
  console.error("LLAMA_MODULES is not set (the node_modules folder holding node-llama-cpp)");
  process.exit(2);
}
const { getLlama, readGgufFileInfo } =
  await import(path.join(modules, "node-llama-cpp", "dist", "index.js"));
const here = path.dirname(fileURLToPath(import.meta.url));
const { max_new_tokens: maxNew, cases } = JSON.parse(readFileSync(casesPath, "utf8"));
const kvType = process.env.LLAMA_KV_TYPE || "F32";
const measure = Boolean(process.env.CHECK_GGUF_MEASURE);

// One thread and no GPU (docs/pitfalls: llama.cpp's default of 4 threads on 2 cores is 1000x
// slower); build "never": the prebuilt CPU binary, never a compiler run.
const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: "error" });
const models = new Map();
async function open(file) {
  if (!models.has(file)) {
    const model = await llama.loadModel({ modelPath: file });
    // F32 KV cache and no flash attention: attention in fp32 as Quantscope computes it (the
    // default F16 cache rounds K and V to f16).
    const context = await model.createContext({
      threads: 1,
      contextSize: 256,
      flashAttention: false,
      experimentalKvCacheKeyType: kvType,
      experimentalKvCacheValueType: kvType,
    });
    models.set(file, { model, context });
  }
  return models.get(file);
}

// Greedy continuation by llama.cpp's own sampler (temperature 0: argmax), stopping after EOS as
// Quantscope does (the EOS id is then the last of new_ids).
async function generate(context, promptIds) {
  const sequence = context.getSequence();
  const out = [];
  try {
    for await (const token of sequence.evaluate(promptIds, { temperature: 0, yieldEogToken: true })) {
      out.push(token);
      if (out.length >= maxNew || context.model.isEogToken(token)) break;
    }
  } finally {
    sequence.dispose();
  }
  return out;
}

// llama.cpp's log-probabilities (its full vocabulary table) after each prefix ids[0..P+j),
// teacher-forced along `ids` (P = promptLength).
async function teacherForced(context, ids, promptLength) {
  const sequence = context.getSequence();
  const rows = [];
  try {
    const steps = sequence.evaluateWithMetadata(ids.slice(0, promptLength), { probabilities: true },
                                                { temperature: 0 });
    let r = await steps.next();
    for (let i = promptLength; !r.done; ++i) {
      const row = new Float64Array(r.value.probabilities.size).fill(-Infinity);
      for (const [t, p] of r.value.probabilities) row[t] = Math.log(p);
      rows.push(row);
      if (i >= ids.length) break;
      r = await steps.next(ids[i]);
    }
    await steps.return();
  } finally {
    sequence.dispose();
  }
  return rows;
}

// Hugging Face names of the weights whose matmul llama.cpp's CPU backend computes on Q8_0-rounded
// activations: Q4_0 and Q8_0 tensors (their vec_dot_type is Q8_0; F32 weights take fp32 inputs).
// Other quantized types round differently (Q4_1 to Q8_1) and are not emulated here.
const ggufToHf = { attn_q: "self_attn.q_proj", attn_k: "self_attn.k_proj", attn_v: "self_attn.v_proj",
                   attn_output: "self_attn.o_proj", ffn_gate: "mlp.gate_proj", ffn_up: "mlp.up_proj",
                   ffn_down: "mlp.down_proj", ffn_gate_shexp: "mlp.shared_expert.gate_proj",
                   ffn_up_shexp: "mlp.shared_expert.up_proj",
                   ffn_down_shexp: "mlp.shared_expert.down_proj" };
// qwen2moe's stacked experts: one tensor [in, out, experts] for every expert's projection.
const stackedToHf = { ffn_gate_exps: "gate_proj", ffn_up_exps: "up_proj", ffn_down_exps: "down_proj" };
async function q8RoundedInputs(file) {
  const names = [];
  for (const t of (await readGgufFileInfo(file)).tensorInfo) {
    if (t.ggmlType === 0 || t.ggmlType === 1) continue; // F32, F16
    if (t.ggmlType !== 2 && t.ggmlType !== 8)
      throw new Error(`${file}: ${t.name} has ggml type ${t.ggmlType}, not Q4_0/Q8_0 (not emulated)`);
    const block = /^blk\.(\d+)\.(\w+)\.weight$/.exec(t.name);
    if (block && ggufToHf[block[2]]) names.push(`model.layers.${block[1]}.${ggufToHf[block[2]]}.weight`);
    else if (block && stackedToHf[block[2]])
      for (let e = 0; e < Number(t.dimensions[2]); ++e)
        names.push(`model.layers.${block[1]}.mlp.experts.${e}.${stackedToHf[block[2]]}.weight`);
    else if (t.name === "token_embd.weight") names.push("model.embed_tokens.weight");
    else if (t.name === "output.weight") names.push("lm_head.weight");
    else throw new Error(`${file}: quantized tensor ${t.name} has no Hugging Face name here`);
  }
  return names;
}

// The reference forward (tests/reference/hf_reference.py: plain PyTorch in fp32, independent of
// the engine; it agrees with Quantscope's forward to 2.5e-5 in the logits, docs/exporters.md) on
// the fp32 checkpoint of the same weights, along `ids`: log-softmax rows for the same prefixes as
// teacherForced, plain (Quantscope's arithmetic) and with the inputs of `rounded` rounded to
// Q8_0 as ggml does (llama.cpp's arithmetic).
function referenceLogProbs(dir, ids, promptLength, rounded) {
  const code = `
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import hf_reference as h
torch.set_grad_enabled(False)
torch.set_num_threads(1)
cfg, w = h.load(sys.argv[2])
ids, start, rounded = torch.tensor([json.loads(sys.argv[3])]), int(sys.argv[4]) - 1, set(json.loads(sys.argv[5]))
rows = lambda r: torch.log_softmax(h.logits(cfg, w, ids, r).double(), -1)[0, start:].tolist()
print(json.dumps({"plain": rows(()), "rounded": rows(rounded)}))`;
  const text = execFileSync("/usr/bin/python3",
                            ["-c", code, path.join(here, "..", "tests", "reference"), dir,
                             JSON.stringify(ids), String(promptLength), JSON.stringify(rounded)],
                            { encoding: "utf8", maxBuffer: 1 << 28 });
  return JSON.parse(text);
}

const top2 = (row) => {
  let a = 0, b = 1;
  if (row[b] > row[a]) [a, b] = [b, a];
  for (let t = 2; t < row.length; ++t) {
    if (row[t] > row[a]) [a, b] = [t, a];
    else if (row[t] > row[b]) b = t;
  }
  return [a, b];
};
const margin = (row) => {
  const [a, b] = top2(row);
  return row[a] - row[b];
};
// The largest difference between llama.cpp's and a reference's margin between the reference's
// top two tokens, over the steps.
function largestMarginDifference(llamaRows, refRows) {
  let largest = 0;
  for (let j = 0; j < Math.min(llamaRows.length, refRows.length); ++j) {
    const [a, b] = top2(refRows[j]);
    largest = Math.max(largest, Math.abs((llamaRows[j][a] - llamaRows[j][b]) - (refRows[j][a] - refRows[j][b])));
  }
  return largest;
}

async function alongQuantscope(c, context, qs) {
  const ids = [...qs.prompt_ids, ...qs.new_ids];
  const P = qs.prompt_ids.length;
  const rounded = c.mode === "quantized" ? await q8RoundedInputs(c.file) : [];
  return { llamaRows: await teacherForced(context, ids, P),
           ...referenceLogProbs(c.reference_dir, ids, P, rounded) };
}

// A quantized case's first differing step k: explained by llama.cpp's activation rounding when
// the plain reference picks Quantscope's token and the rounded one llama.cpp's.
function diagnose(rows, k, qsToken, llamaToken) {
  const { llamaRows, plain, rounded } = rows;
  const plainPick = top2(plain[k])[0];
  const roundedPick = top2(rounded[k])[0];
  const ok = plainPick === qsToken && roundedPick === llamaToken;
  return { ok, note: `reference picks ${plainPick} by ${margin(plain[k]).toFixed(4)}, ` +
                     `with Q8_0 activations ${roundedPick} by ${margin(rounded[k]).toFixed(4)} ` +
                     `(llama.cpp by ${margin(llamaRows[k]).toFixed(4)}): ` +
                     (ok ? "activation rounding" : "NOT explained") };
}

let failed = false;
const table = [];
for (const c of cases) {
  const { model, context } = await open(c.file);
  const qs = c.quantscope;
  const promptIds = [...(model.tokens.shouldPrependBosToken ? [model.tokens.bos] : []),
                     ...model.tokenize(c.prompt)];
  const tokensEqual = JSON.stringify(promptIds) === JSON.stringify(qs.prompt_ids);
  const ids = await generate(context, promptIds);
  const visible = model.isEogToken(ids.at(-1)) ? ids.slice(0, -1) : ids;
  // Detokenized after the prompt's tokens, so that the first word's leading space comes out as in
  // Quantscope's text (decode(prompt + new) minus decode(prompt)).
  const text = model.detokenize(visible, false, promptIds);
  let k = 0;
  while (k < Math.min(ids.length, qs.new_ids.length) && ids[k] === qs.new_ids[k]) ++k;
  const idsEqual = k === ids.length && k === qs.new_ids.length;
  const rows = tokensEqual && (measure || (!idsEqual && c.mode === "quantized"))
    ? await alongQuantscope(c, context, qs) : null;
  let verdict, ok;
  if (!tokensEqual) {
    ok = false;
    verdict = `prompt ids differ: llama.cpp ${promptIds.join(" ")}, quantscope ${qs.prompt_ids.join(" ")}`;
  } else if (idsEqual) {
    ok = text === qs.text;
    verdict = ok ? "equal" : `ids equal, text differs: ${JSON.stringify(text)}`;
  } else {
    const word = (t) => (t === undefined ? "end" : `${t} ${JSON.stringify(model.detokenize([t]))}`);
    verdict = `step ${k}: llama.cpp ${word(ids[k])}, quantscope ${word(qs.new_ids[k])}`;
    ok = false;
    if (rows && k < ids.length && k < qs.new_ids.length) {
      const d = diagnose(rows, k, qs.new_ids[k], ids[k]);
      ok = d.ok;
      verdict += `; ${d.note}`;
    }
  }
  failed ||= !ok;
  const moved = rows ? [largestMarginDifference(rows.llamaRows, rows.plain),
                        c.mode === "quantized" ? largestMarginDifference(rows.llamaRows, rows.rounded) : null]
                     : null;
  table.push({ label: c.label, prompt: c.prompt, ok, verdict, tokensEqual, text, moved });
}

const width = Math.max(...table.map((r) => r.label.length));
const promptWidth = Math.max(...table.map((r) => r.prompt.length)) + 2;
const fmt = (x) => (x === null || x === undefined ? "-" : x.toExponential(1)).padEnd(8);
console.log(`${"file".padEnd(width)}  ${"prompt".padEnd(promptWidth)}  tokens  ` +
            `${measure ? "dmargin  dm(Q8_0) " : ""}result`);
for (const r of table) {
  console.log(`${r.label.padEnd(width)}  ${JSON.stringify(r.prompt).padEnd(promptWidth)}  ` +
              `${(r.tokensEqual ? "equal" : "DIFFER").padEnd(6)}  ` +
              `${measure ? `${fmt(r.moved?.[0])} ${fmt(r.moved?.[1])} ` : ""}` +
              `${r.ok ? "" : "FAIL "}${r.verdict}`);
}
if (process.env.CHECK_GGUF_VERBOSE) {
  for (const r of table) console.log(`${r.label} ${JSON.stringify(r.prompt)}: ${JSON.stringify(r.text)}`);
}
for (const { model, context } of models.values()) {
  await context.dispose();
  await model.dispose();
}
process.exit(failed ? 1 : 0);
