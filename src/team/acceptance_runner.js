// Runs an acceptance test the team wrote in JavaScript (see acceptance.rs), in the
// workspace:
//
//   node -e RUNNER TEST
//
// Exit 0: passed; 1: the code failed it (a failed assert, or an error thrown inside the
// workspace's code); 3: the test itself is broken (a syntax error, a module or name it
// got wrong). Relative requires resolve from the project root, as the test was asked to
// write them, though the test lives under .conclave/.
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const root = process.cwd();
const test = path.resolve(process.argv[1]);
const BROKEN = 3;

function thrownInCode(error) {
  const stack = String((error && error.stack) || '');
  return stack
    .split('\n')
    .filter((line) => line.trim().startsWith('at '))
    .some(
      (line) =>
        line.includes(root + path.sep) &&
        !line.includes(path.sep + '.conclave' + path.sep) &&
        !line.includes(path.sep + 'node_modules' + path.sep),
    );
}

function settle(error) {
  console.error((error && error.stack) || String(error));
  const assertion = error && error.code === 'ERR_ASSERTION';
  const inCode =
    thrownInCode(error) && !(error instanceof SyntaxError) && !(error && error.code === 'MODULE_NOT_FOUND');
  process.exit(assertion || inCode ? 1 : BROKEN);
}

process.on('uncaughtException', settle);
process.on('unhandledRejection', settle);

try {
  const source = fs.readFileSync(test, 'utf8');
  const run = new Function('require', 'module', 'exports', '__filename', '__dirname', source);
  const module_ = { exports: {} };
  run(createRequire(path.join(root, 'acceptance_test.js')), module_, module_.exports, test, root);
} catch (error) {
  settle(error);
}
