#!/usr/bin/env node
// Writes contributes.debuggers[type=mixdbg].configurationAttributes into package.json from the
// one source of mixdbg dap's launch/attach arguments, mixdbg/dap/configuration.json.
// With --check it writes nothing and exits 1 when package.json differs from what it would write.
'use strict';
const fs = require('fs');
const path = require('path');

const HERE = path.resolve(__dirname, '..');
const SOURCE = path.resolve(HERE, '..', '..', 'mixdbg', 'dap', 'configuration.json');
const MANIFEST = path.join(HERE, 'package.json');

/** The configurationAttributes VS Code reads: the launch and attach schemas, as they are. */
function attributes(source) {
  return { launch: source.launch, attach: source.attach };
}

function main() {
  const source = JSON.parse(fs.readFileSync(SOURCE, 'utf8'));
  const before = fs.readFileSync(MANIFEST, 'utf8');
  const manifest = JSON.parse(before);
  const debuggers = manifest.contributes.debuggers.filter((d) => d.type === 'mixdbg');
  if (debuggers.length !== 1) throw new Error('package.json must contribute exactly one debugger of type mixdbg');
  debuggers[0].configurationAttributes = attributes(source);
  const after = JSON.stringify(manifest, null, 2) + '\n';
  if (process.argv.includes('--check')) {
    if (after !== before) {
      console.error('package.json configurationAttributes differ from mixdbg/dap/configuration.json: run npm run gen');
      process.exit(1);
    }
    return;
  }
  if (after !== before) fs.writeFileSync(MANIFEST, after);
}

main();
