// node validate_schema.cjs NPM_PREFIX REPORT.json...
// Validates each report against mutation-testing-report-schema's JSON schema; exit 1 on the
// first invalid one, printing ajv's errors.
const fs = require('fs');
const path = require('path');
const [prefix, ...reports] = process.argv.slice(2);
const modules = path.join(prefix, 'node_modules');
const Ajv = require(path.join(modules, 'ajv')).default;
const addFormats = require(path.join(modules, 'ajv-formats')).default;
const schemaPath = path.join(modules, 'mutation-testing-report-schema', 'dist', 'src',
                             'mutation-testing-report-schema.json');
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validate = ajv.compile(schema);
const version = require(path.join(modules, 'mutation-testing-report-schema', 'package.json')).version;
let bad = 0;
for (const file of reports) {
  const report = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (validate(report)) {
    const mutants = Object.values(report.files).reduce((n, f) => n + f.mutants.length, 0);
    console.log(`${file}: valid against mutation-testing-report-schema ${version} (${mutants} mutants)`);
  } else {
    bad++;
    console.log(`${file}: INVALID against mutation-testing-report-schema ${version}`);
    for (const e of validate.errors) console.log(`  ${e.instancePath || '/'} ${e.message}`);
  }
}
process.exit(bad ? 1 : 0);
