// The VS Code extension in a real VS Code: code-server (VS Code 1.100 on Node 20) with the
// built .vsix installed, driven by Debian's Chromium through playwright-core, on a workspace
// whose model is scripted. A person's steps: submit a task, watch the Tasks tree and the
// status bar move (with what the task spent), answer a file-change approval from its diff, see
// the file written, reload the window and find the task and a pending approval still there,
// answer it.
//
// Needs: ./install.sh (code-server, playwright-core, chromium), the built .vsix
// (editors/vscode/test.sh) and the server binary. Environment:
//   CONCLAVE_BIN       the server (default <repo>/target/debug/conclave)
//   CONCLAVE_VSIX      the extension (default <repo>/editors/vscode/dist/conclave.vsix)
//   CHROMIUM           the browser (default /usr/bin/chromium)
//   E2E_ARTIFACTS      where screenshots go (default tests/vscode-e2e/artifacts, git-ignored)
//   README_IMAGES      where the README's picture of VS Code goes as vscode.png (docs/images
//                      to renew it); unset, it stays with the other screenshots

import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const BIN = process.env.CONCLAVE_BIN ?? join(repo, 'target/debug/conclave');
const VSIX = process.env.CONCLAVE_VSIX ?? join(repo, 'editors/vscode/dist/conclave.vsix');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const CODE_SERVER = join(here, 'node_modules/.bin/code-server');
const ARTIFACTS = resolve(process.env.E2E_ARTIFACTS ?? join(here, 'artifacts'));

const TASK = 'Write hello.txt, then later.txt';
/** Tokens and cost as the extension writes them: "1.2k tokens · $0.0012". */
const SPENT = /[\d.]+k? tokens · \$0\.\d{4}/;

/** Two subtasks, the second after the first, each writing one file (asked as a fileChange). */
const SCRIPT = [
  {
    match: 'Plan this task',
    text: JSON.stringify({
      subtasks: [{ description: 'Create hello.txt' }, { description: 'Create later.txt', dependsOn: [0] }],
    }),
  },
  { match: 'created later.txt', text: 'Wrote later.txt.', repeat: true },
  { match: 'created hello.txt', text: 'Wrote hello.txt.', repeat: true },
  {
    match: 'Create later.txt',
    toolCalls: [{ name: 'file_write', arguments: { path: 'later.txt', content: 'written after the reload\n' } }],
    repeat: true,
  },
  {
    match: 'Create hello.txt',
    toolCalls: [{ name: 'file_write', arguments: { path: 'hello.txt', content: 'hello from conclave\n' } }],
    repeat: true,
  },
];

const CONFIG = `[llm]
provider = "scripted"
script = "script.json"

[approvals]
fileChanges = "ask"

# A person may take minutes to answer: the tool call waiting for the answer must not time out.
[recovery]
stepTimeoutMs = 600000

[governance]
review = "rules"

# A price for the scripted model, so the tree and the status bar show a cost.
[pricing."scripted"]
input = 1.0
output = 2.0
`;

let root;
let workspace;
let codeServer;
let codeServerLog = '';
let browser;
let page;
let url;
let shot = 0;

function freePort() {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function screenshot(name) {
  shot += 1;
  const path = join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** Polls `check` (sync or async) until it returns something truthy. */
async function until(what, check, ms = 60000) {
  const deadline = Date.now() + ms;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await screenshot(`timeout-${what.replace(/\W+/g, '-')}`).catch(() => undefined);
  // What the person would see, for a failure on a machine whose screenshots are gone.
  const seen = await page
    .evaluate(() => ({
      statusBar: [...document.querySelectorAll('.statusbar-item')].map((e) => e.textContent?.trim()).filter((t) => t?.includes('Conclave')),
      notifications: [...document.querySelectorAll('.notification-toast, .notifications-center .notification-list-item')].map((e) => e.textContent?.trim()),
    }))
    .catch((error) => ({ page: String(error) }));
  throw new Error(
    `timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)}; on screen: ${JSON.stringify(seen)})`,
  );
}

const statusBar = () => page.locator('.statusbar-item', { hasText: 'Conclave:' }).first();
const tasksView = () => page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^\s*Tasks/i }) });
const treeRows = () => tasksView().locator('.monaco-list-row');
const toast = (text) => page.locator('.notification-toast', { hasText: text });

async function statusText() {
  return ((await statusBar().textContent({ timeout: 2000 })) ?? '').trim();
}

async function rowTexts() {
  return (await treeRows().allTextContents()).map((t) => t.replace(/[\s\u00a0]+/g, ' ').trim());
}

async function runCommand(title) {
  await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => undefined);
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first().waitFor();
  await page.keyboard.press('Enter');
}

/** Opens the Conclave view container from the activity bar (unless it is showing). */
async function showConclave() {
  await until('the Conclave view', async () => {
    if (await tasksView().first().isVisible()) return true;
    await page.locator('.activitybar .action-item a[aria-label^="Conclave"]').first().click({ timeout: 2000 });
    return false;
  });
}

async function openWindow() {
  await page.goto(url);
  await page.locator('.monaco-workbench').waitFor({ timeout: 90000 });
  await until('the Conclave status bar item', async () => (await statusText()).startsWith('Conclave:'), 90000);
}

before(async () => {
  for (const [what, path] of [
    ['the server binary (cargo build)', BIN],
    ['the .vsix (editors/vscode/test.sh)', VSIX],
    ['code-server (tests/vscode-e2e/install.sh)', CODE_SERVER],
    ['chromium (tests/vscode-e2e/install.sh)', CHROMIUM],
  ]) {
    assert.ok(existsSync(path), `${what} not found at ${path}`);
  }
  rmSync(ARTIFACTS, { recursive: true, force: true });
  mkdirSync(ARTIFACTS, { recursive: true });
  console.log(`# screenshots: ${ARTIFACTS}`);

  root = realpathSync(mkdtempSync(join(tmpdir(), 'conclave-vscode-e2e-')));
  workspace = join(root, 'workspace');
  const userData = join(root, 'user-data');
  const extensions = join(root, 'extensions');
  for (const dir of [workspace, join(userData, 'User'), join(userData, 'Machine'), extensions, join(root, 'config')]) {
    mkdirSync(dir, { recursive: true });
  }
  writeFileSync(join(workspace, 'script.json'), JSON.stringify(SCRIPT, null, 2));
  writeFileSync(join(workspace, 'conclave.toml'), CONFIG);
  // A code-server window is a remote window: VS Code drops machine-scoped settings such as
  // `conclave.serverPath` from the (browser-side) user settings and takes them from the
  // remote machine's settings. From User/settings.json the path arrived only when the
  // extension host started before the setting's scope was known: in most runs, not all.
  writeFileSync(join(userData, 'Machine/settings.json'), JSON.stringify({ 'conclave.serverPath': BIN }));
  writeFileSync(
    join(userData, 'User/settings.json'),
    JSON.stringify({
      'workbench.startupEditor': 'none',
      'security.workspace.trust.enabled': false,
      'workbench.tips.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'extensions.autoCheckUpdates': false,
      'extensions.autoUpdate': false,
      'workbench.enableExperiments': false,
      'update.mode': 'none',
    }),
  );
  const env = { ...process.env, XDG_CONFIG_HOME: join(root, 'config'), XDG_DATA_HOME: join(root, 'data') };
  execFileSync(CODE_SERVER, ['--user-data-dir', userData, '--extensions-dir', extensions, '--install-extension', VSIX], {
    env,
    stdio: 'pipe',
  });
  const port = await freePort();
  codeServer = spawn(
    CODE_SERVER,
    [
      '--auth', 'none',
      '--bind-addr', `127.0.0.1:${port}`,
      '--user-data-dir', userData,
      '--extensions-dir', extensions,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      workspace,
    ],
    // Its own process group: code-server forks watchers and extension hosts, all ended with it.
    { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  codeServer.stdout.on('data', (d) => (codeServerLog += d));
  codeServer.stderr.on('data', (d) => (codeServerLog += d));
  await until('code-server to listen', () => codeServerLog.includes('HTTP server listening'), 60000);
  url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;

  browser = await launchBrowser('chromium');
  page = browser.pages()[0] ?? (await browser.newPage());
});

/** Debian's Chromium with a fresh profile (playwright passes it as --user-data-dir). */
function launchBrowser(profile) {
  return chromium.launchPersistentContext(join(root, profile), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage', // containers give /dev/shm little room
    ],
  });
}

after(async () => {
  await browser?.close().catch(() => undefined);
  if (codeServer) {
    try {
      process.kill(-codeServer.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  // The servers the extension hosts started (their working directory is our workspace):
  // none may outlive the test.
  for (const pid of serversOf(workspace)) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // gone meanwhile
    }
  }
  if (process.env.E2E_KEEP !== '1' && root) rmSync(root, { recursive: true, force: true });
  console.log(`# screenshots kept in ${ARTIFACTS}`);
});

/** A `conclave serve` that initialized on `dir` and holds it (its stdin stays open). */
async function strayServer(dir) {
  const child = spawn(BIN, ['serve', '--stdio'], { cwd: dir, stdio: ['pipe', 'pipe', 'ignore'] });
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { processId: null, rootUri: `file://${dir}`, capabilities: {} },
  });
  child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  await until('the stray server to initialize', () => out.includes('"result"'), 30000);
  return child;
}

/** Pids of `conclave serve` processes working in `dir`. */
function serversOf(dir) {
  const pids = [];
  if (!dir) return pids;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (command[0] === BIN && command[1] === 'serve' && realpathSync(`/proc/${entry}/cwd`) === dir) pids.push(Number(entry));
    } catch {
      // not ours, or gone
    }
  }
  return pids;
}

/** The log file of the extension's Output channel ("Conclave") of the newest window. */
function outputChannelLog() {
  const logs = join(root, 'user-data/logs');
  const files = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name === 'Conclave.log') files.push(path);
    }
  };
  if (existsSync(logs)) walk(logs);
  return files.map((f) => readFileSync(f, 'utf8')).join('\n');
}

test('a person uses Conclave in a real VS Code: task, tree, status bar, file-change approval, reload', async () => {
  await openWindow();
  assert.match(await statusText(), /Conclave: idle/, 'the server started and the status bar says idle');
  await screenshot('started');

  // Submit a task from the command palette.
  await runCommand('Conclave: Submit Task');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(TASK);
  await page.keyboard.press('Enter');

  // The Tasks tree shows the task, the status bar moves off idle.
  await until('the task in the Tasks tree', async () => (await rowTexts()).some((t) => t.includes(TASK)));
  await until('the status bar to show the running task', async () => /running|escalated/.test(await statusText()));
  await screenshot('task-running');

  // The first file change is asked: a diff of before/after and a notification with short buttons.
  const diffTab = page.locator('.tab', { hasText: 'Conclave proposes: hello.txt' });
  await until('the diff of hello.txt', () => diffTab.isVisible());
  const diff = page.locator('.monaco-diff-editor');
  await until('the proposed content in the diff', async () => ((await diff.first().textContent()) ?? '').replace(/\u00a0/g, ' ').includes('hello from conclave'));
  const approvalToast = toast('hello.txt');
  await until('the file-change notification', () => approvalToast.first().isVisible());
  const buttons = (await approvalToast.first().locator('.monaco-button').allTextContents()).map((b) => b.trim());
  assert.ok(buttons.includes('Approve') && buttons.includes('Reject'), `buttons: ${JSON.stringify(buttons)}`);
  assert.ok(!existsSync(join(workspace, 'hello.txt')), 'nothing is written before the approval');
  await until('the approval row on top of the Tasks tree', async () => (await rowTexts())[0]?.includes('awaiting your answer'));
  // What the task spent so far (its plan, the first coder's call): on its row and in the
  // status bar, in tokens and dollars.
  await until("the task's tokens and cost in the Tasks tree", async () =>
    (await rowTexts()).some((t) => t.includes(TASK) && SPENT.test(t)),
  );
  await until('the running total in the status bar', async () => new RegExp(`running · ${SPENT.source}`).test(await statusText()));
  await screenshot('file-change-approval');

  await approvalToast.first().locator('.monaco-button', { hasText: 'Approve' }).click();
  await until('hello.txt written', () => existsSync(join(workspace, 'hello.txt')) && readFileSync(join(workspace, 'hello.txt'), 'utf8'));
  assert.equal(readFileSync(join(workspace, 'hello.txt'), 'utf8'), 'hello from conclave\n');
  await until('the answered diff to close', async () => (await diffTab.count()) === 0);

  // The second subtask asks for later.txt; it stays pending across a reload of the window.
  await until('the second approval (later.txt)', async () => (await rowTexts()).some((t) => t.includes('later.txt')));
  await screenshot('second-approval-pending');
  assert.ok(!existsSync(join(workspace, 'later.txt')));

  // A second window on the same folder while the first one serves it: one clear message
  // naming the holder, with actions; no restart loop; the first window keeps working.
  const first = page;
  page = await browser.newPage();
  await openWindow();
  const busy = toast('already serves this folder');
  await until('the busy message in the second window', () => busy.first().isVisible());
  const holder = /pid (\d+)/.exec((await busy.first().textContent()) ?? '');
  assert.ok(holder, 'the busy message names the holder');
  assert.ok(serversOf(workspace).includes(Number(holder[1])), 'the named pid is the server of the first window');
  await until('the status bar to say busy', async () => /Conclave: busy \(pid \d+\)/.test(await statusText()));
  const actions = (await busy.first().locator('.monaco-button').allTextContents()).map((b) => b.trim());
  assert.deepEqual(actions, ['Take Over', 'Retry', 'Show Output']);
  assert.equal(await toast('crashed').count(), 0, 'no restart loop');
  assert.equal(await toast('connection got disposed').count(), 0, "the library's own words are not shown");
  await showConclave();
  await until('the Tasks view to say the folder is served elsewhere', () =>
    tasksView().getByText('Another Conclave server serves this folder').first().isVisible(),
  );
  await screenshot('second-window-busy');
  await page.close();
  page = first;

  // Reload the window: a new extension host and a new server; the task and the pending
  // approval are still there.
  await runCommand('Developer: Reload Window');
  await page.waitForEvent('load', { timeout: 60000 }).catch(() => undefined);
  await page.locator('.monaco-workbench').waitFor({ timeout: 90000 });
  await until('the server after the reload', async () => /Conclave: (\d+ running|⚠|idle)/.test(await statusText()), 90000);
  await showConclave();
  await until('the task after the reload', async () => (await rowTexts()).some((t) => t.includes(TASK)), 90000);
  await until('the pending approval after the reload', async () => (await rowTexts()).some((t) => t.includes('later.txt')), 90000);
  await screenshot('after-reload');

  // The browser goes away without a word (a closed laptop, a killed tab): code-server may
  // keep that window's extension host, and its server, alive for minutes. When it did not
  // this time, a stray server stands in for it. A new window is told who holds the folder,
  // and Take Over gets it back.
  await browser.close();
  await until('the old server to exit or linger', async () => {
    await new Promise((r) => setTimeout(r, 3000));
    return true;
  });
  let stray;
  if (serversOf(workspace).length === 0) stray = await strayServer(workspace);
  console.log(`# the folder is held by ${stray ? `a stray server (pid ${stray.pid})` : 'the closed window\'s server'}`);
  browser = await launchBrowser('chromium-2');
  page = browser.pages()[0] ?? (await browser.newPage());
  await openWindow();
  const leftover = toast('already serves this folder');
  await until('the busy message after the browser went away', () => leftover.first().isVisible(), 90000);
  await screenshot('leftover-server-busy');
  await leftover.first().locator('.monaco-button', { hasText: 'Take Over' }).click();
  await until('the server after Take Over', async () => /Conclave: (\d+ running|⚠|idle)/.test(await statusText()), 90000);
  if (stray) assert.notEqual(stray.exitCode ?? stray.signalCode, null, 'the stray server was stopped');
  await showConclave();
  await until('the task after Take Over', async () => (await rowTexts()).some((t) => t.includes(TASK)), 90000);
  await until('the pending approval after Take Over', async () => (await rowTexts()).some((t) => t.includes('later.txt')), 90000);
  await screenshot('after-take-over');

  // Answer it from the tree: the diff opens, pick Approve.
  await treeRows().filter({ hasText: 'later.txt' }).first().click();
  await until('the diff of later.txt', () => page.locator('.tab', { hasText: 'Conclave proposes: later.txt' }).isVisible());
  await page.locator('.quick-input-widget .monaco-list-row', { hasText: 'Approve' }).first().click();
  // applyEdit creates the file, then fills it: wait for the content.
  await until('later.txt written', () => existsSync(join(workspace, 'later.txt')) && readFileSync(join(workspace, 'later.txt'), 'utf8'));
  assert.equal(readFileSync(join(workspace, 'later.txt'), 'utf8'), 'written after the reload\n');
  await until('the answered diff to close', async () => (await page.locator('.tab', { hasText: 'Conclave proposes: later.txt' }).count()) === 0);
  await until('the task completed', async () => (await rowTexts()).some((t) => t.includes(TASK) && /completed/.test(t)), 90000);
  await until('the status bar back to idle', async () => /Conclave: idle/.test(await statusText()));
  const done = (await rowTexts()).find((t) => t.includes(TASK));
  assert.match(done, SPENT, 'the finished task keeps what it cost');
  await screenshot('completed');

  // How the task was checked: a Checks node under it; one click on a check that has
  // something to say opens it as a read-only document.
  const checksRow = treeRows().filter({ hasText: /^\s*Checks/ }).first();
  await until('the Checks node under the task', () => checksRow.isVisible());
  assert.match((await checksRow.textContent()) ?? '', /\d+ (passed|failed|skipped)/);
  await checksRow.click();
  const said = treeRows().filter({ hasText: /(skipped|failed) · / }).first();
  await until('a check with something to say', () => said.isVisible());
  const status = /(skipped|failed) · /.exec((await said.textContent()) ?? '')[1];
  await said.click();
  const checkTab = page.locator('.tab', { hasText: '.log' });
  await until('the check opened in a tab', () => checkTab.first().isVisible());
  await until("the check's document", async () =>
    ((await page.locator('.monaco-editor .view-lines').first().textContent()) ?? '').replace(/\u00a0/g, ' ').includes(`— ${status}`),
  );
  await screenshot('check-output');

  // The README's picture is this screen as a person leaves it. VS Code cannot withdraw a
  // notification, so the prompt of the approval answered from the tree is still there
  // (its buttons now answer "already decided"): put it away as a person would.
  await runCommand('Notifications: Clear All Notifications');
  await until('no notification on screen', async () => (await page.locator('.notification-toast').count()) === 0);
  assert.equal(await page.locator('.quick-input-widget:visible, .monaco-dialog-box').count(), 0, 'no prompt or dialog open');
  const picture = await screenshot('readme-vscode');
  if (process.env.README_IMAGES) copyFileSync(picture, join(process.env.README_IMAGES, 'vscode.png'));

  const log = outputChannelLog();
  assert.doesNotMatch(log, /crashed \d+ times/, 'no restart loop');
  // Server log lines come once, through window/logMessage: never again as a red [error].
  const errors = log.split('\n').filter((l) => l.includes('[error]'));
  const unexpected = errors.filter((l) => !l.includes('[error] Conclave: another Conclave server'));
  assert.deepEqual(unexpected, [], 'the only errors in the Output channel are the busy messages');
  assert.ok(log.includes('[info] subtask finished'), 'server log lines reach the Output channel');
});
