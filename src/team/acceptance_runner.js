// Runs an acceptance test the team wrote in JavaScript (see acceptance.rs), in the
// workspace:
//
//   node -e RUNNER TEST [TASK_FILE]
//
// Exit 0: passed; 1: the code failed it (a failed assert, an error thrown inside the
// workspace's code, or a module the task names that does not export a function the task
// names); 3: the test itself is broken (a syntax error, a module or name it got wrong).
// Relative requires resolve from the project root, as the test was asked to write them,
// though the test lives under .conclave/.
const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');

const root = process.cwd();
const test = path.resolve(process.argv[1]);
const taskText = process.argv[2] ? fs.readFileSync(process.argv[2], 'utf8') : '';
const taskWords = new Set(taskText.match(/[A-Za-z_$][\w$]*/g) || []);
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

function settle(error) {
  console.error((error && error.stack) || String(error));
  const assertion = error && error.code === 'ERR_ASSERTION';
  const inCode =
    thrownInCode(error) && !(error instanceof SyntaxError) && !(error && error.code === 'MODULE_NOT_FOUND');
  const lacking = !assertion && !inCode && lacksTaskName(error);
  if (lacking) console.error('The code does not export a function the task names.');
  process.exit(assertion || inCode || lacking ? 1 : BROKEN);
}

process.on('uncaughtException', settle);
process.on('unhandledRejection', settle);

try {
  const source = fs.readFileSync(test, 'utf8');
  const run = new Function('require', 'module', 'exports', '__filename', '__dirname', source);
  const module_ = { exports: {} };
  run(rootRequire, module_, module_.exports, test, root);
} catch (error) {
  settle(error);
}
