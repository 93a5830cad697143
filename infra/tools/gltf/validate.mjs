// Validates one glTF or GLB file with the Khronos validator and prints its
// report as JSON on stdout. Exit 1 when the report has errors, 2 when the file
// could not be read or recognised at all (the validator rejects its promise).
import { readFile } from 'node:fs/promises';
import validator from 'gltf-validator';

const path = process.argv[2];
if (!path || process.argv.length > 3) {
  console.error('usage: node validate.mjs FILE.glb');
  process.exit(2);
}

try {
  const bytes = new Uint8Array(await readFile(path));
  const report = await validator.validateBytes(bytes, { uri: path, maxIssues: 0, writeTimestamp: false });
  console.log(JSON.stringify(report, null, 2));
  process.exit(report.issues.numErrors > 0 ? 1 : 0);
} catch (err) {
  console.error(`${path}: not validated: ${err}`);
  process.exit(2);
}
