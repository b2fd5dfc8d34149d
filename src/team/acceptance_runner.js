// Runs an acceptance test the team wrote in JavaScript (see acceptance.rs), in the
// workspace:
//
//   node -e RUNNER TEST [TASK_FILE DISABLED_JSON]
//
// Exit 0: passed; 1: the code failed it (a failed assert, an error thrown inside the
// workspace's code, or a module the task names that does not export a function the task
// names); 3: the test itself is broken (a syntax error, a module or name it got wrong).
// Relative requires resolve from the project root, as the test was asked to write them,
// though the test lives under .conclave/.
//
// A broken test is found by a rule with an id, as in acceptance_runner.py: a line
// `::rule ID` names it, and a rule whose id is in DISABLED_JSON (`verify.disabled`) does
// not judge: `acceptance.test-error` switched off counts the error against the code;
// `acceptance.unreadable` (a test that does not parse) cannot be switched off.
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const root = process.cwd();
const test = path.resolve(process.argv[1]);
const taskText = process.argv[2] ? fs.readFileSync(process.argv[2], 'utf8') : '';
const taskWords = new Set(taskText.match(/[A-Za-z_$][\w$]*/g) || []);
const disabled = new Set(process.argv[3] ? JSON.parse(process.argv[3]) : []);
const rootRequire = createRequire(path.join(root, 'acceptance_test.js'));
const BROKEN = 3;

// "slugify is not a function" is the code's failure when a module the task names does
// not export the function the task names (say, `module.exports` dropped from a file the
// task said to keep exported).
function lacksTaskName(error) {
  const named = /^([\w$]+) is not a function/.exec(String(error && error.message));
  if (!named || !taskWords.has(named[1])) return false;
  return fs.readdirSync(root).some((file) => {
    const stem = file.replace(/\.c?js$/, '');
    if (stem === file || !taskWords.has(stem)) return false;
    try {
      const exported = rootRequire('./' + file);
      return typeof exported !== 'function' && typeof (exported && exported[named[1]]) !== 'function';
    } catch {
      return false;
    }
  });
}

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

function settle(error, unreadable = false) {
  console.error((error && error.stack) || String(error));
  if (unreadable) {
    console.error('The test does not parse.');
    console.log('::rule acceptance.unreadable');
    process.exit(BROKEN);
  }
  const assertion = error && error.code === 'ERR_ASSERTION';
  const inCode =
    thrownInCode(error) && !(error instanceof SyntaxError) && !(error && error.code === 'MODULE_NOT_FOUND');
  const lacking = !assertion && !inCode && lacksTaskName(error);
  if (lacking) console.error('The code does not export a function the task names.');
  if (assertion || inCode || lacking) process.exit(1);
  if (disabled.has('acceptance.test-error')) process.exit(1);
  console.error('The error is in the test itself, not in the code.');
  console.log('::rule acceptance.test-error');
  process.exit(BROKEN);
}

process.on('uncaughtException', settle);
process.on('unhandledRejection', settle);

let run;
try {
  const source = fs.readFileSync(test, 'utf8');
  run = new Function('require', 'module', 'exports', '__filename', '__dirname', source);
} catch (error) {
  settle(error, error instanceof SyntaxError);
}
try {
  const module_ = { exports: {} };
  run(rootRequire, module_, module_.exports, test, root);
} catch (error) {
  settle(error);
}
