-- Helpers of the Neovim plugin's tests: a temp workspace on the scripted model, the real
-- server started and stopped through the plugin.
local M = {}

M.plugin_dir =
  vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p'))))
M.repo = vim.fs.dirname(vim.fs.dirname(M.plugin_dir))
M.bin = vim.env.CONCLAVE_BIN or (M.repo .. '/target/debug/conclave')
M.timeout = tonumber(vim.env.CONCLAVE_TEST_TIMEOUT or '') or 60000

local function write(path, text)
  local fd = assert(io.open(path, 'w'))
  fd:write(text)
  fd:close()
end

function M.read(path)
  local fd = io.open(path, 'r')
  if not fd then
    return nil
  end
  local text = fd:read('*a')
  fd:close()
  return text
end

--- A temp workspace with conclave.toml (scripted model) and script.json.
function M.workspace(script, extra_toml)
  local tmp = vim.fs.dirname(vim.fn.tempname())
  local dir = vim.uv.fs_realpath(tmp) .. '/ws-' .. vim.uv.hrtime()
  vim.fn.mkdir(dir, 'p')
  dir = vim.uv.fs_realpath(dir)
  write(dir .. '/script.json', vim.json.encode(script))
  write(
    dir .. '/conclave.toml',
    table.concat({
      'heartbeatMs = 1000',
      extra_toml or '',
      '[llm]',
      'provider = "scripted"',
      'script = "script.json"',
      '[governance]',
      'review = "rules"',
      '[recovery.call]',
      'maxAttempts = 1',
      '[recovery.severity.low]',
      'baseDelayMs = 10',
      '[recovery.severity.medium]',
      'baseDelayMs = 10',
      '[recovery.severity.high]',
      'baseDelayMs = 10',
      '',
    }, '\n')
  )
  return dir
end

--- Wait for `cond()` with a deadline; fails the test with `what` when it runs out.
function M.wait(what, cond, ms)
  local ok = vim.wait(ms or M.timeout, function()
    local good, value = pcall(cond)
    return good and value and true or false
  end, 20)
  assert(ok, 'timed out waiting for ' .. what)
end

--- Pids of conclave processes whose working directory is `dir`.
function M.server_pids(dir)
  local pids = {}
  local handle = vim.uv.fs_scandir('/proc')
  while handle do
    local name = vim.uv.fs_scandir_next(handle)
    if not name then
      break
    end
    if name:match('^%d+$') then
      local cwd = vim.uv.fs_readlink('/proc/' .. name .. '/cwd')
      local exe = vim.uv.fs_readlink('/proc/' .. name .. '/exe')
      if cwd == dir and exe and vim.fs.basename(exe):match('^conclave') then
        table.insert(pids, tonumber(name))
      end
    end
  end
  return pids
end

--- Start the plugin's client in `dir` and wait until the server answered initialize.
function M.start(dir, opts)
  vim.cmd.cd(dir)
  require('conclave').setup(vim.tbl_deep_extend('force', { cmd = { M.bin, 'serve', '--stdio' } }, opts or {}))
  local client = require('conclave').start()
  assert(client, 'the client started')
  M.wait('the server to initialize', function()
    return require('conclave.client').is_ready(client)
  end, 30000)
  return client
end

--- A synchronous request for assertions.
function M.request(client, method, params)
  local res = client:request_sync(method, params or vim.empty_dict(), 10000)
  assert(res, 'no answer to ' .. method)
  assert(res.err == nil, method .. ' failed: ' .. vim.inspect(res.err))
  return res.result
end

--- The task whose title or description `pred` accepts (first one).
function M.only_task()
  local entries = require('conclave.tasks').list()
  return entries[1] and entries[1].task
end

function M.buf_text(bufnr)
  return table.concat(vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
end

--- Answers nothing itself: every `vim.ui.select` is recorded in the returned list, each
--- with the text of the float shown beside it (an approval's detail) as `float_text`.
function M.capture_selects()
  local asked = {}
  vim.ui.select = function(items, opts, on_choice)
    local float_text
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= '' then
        float_text = M.buf_text(vim.api.nvim_win_get_buf(win))
      end
    end
    table.insert(asked, { items = items, opts = opts, on_choice = on_choice, float_text = float_text })
  end
  return asked
end

local original_select = vim.ui.select
local original_input = vim.ui.input

--- Stop the server (and prove the process is gone), reset the plugin's state.
function M.stop(dir)
  require('conclave').stop()
  M.wait('the client to stop', function()
    return #require('conclave.client').clients() == 0
  end, 20000)
  M.wait('the server process to exit', function()
    return #M.server_pids(dir) == 0
  end, 20000)
  vim.ui.select = original_select
  vim.ui.input = original_input
  vim.cmd('silent! tabonly!')
  vim.cmd('silent! only!')
  vim.cmd('enew!')
  vim.cmd('silent! %bwipeout!')
  local tasks = require('conclave.tasks')
  for id in pairs(tasks.tasks) do
    tasks.tasks[id] = nil
  end
  require('conclave.approvals').pending = {}
  require('conclave.status').refresh()
  vim.cmd.cd(M.plugin_dir)
  vim.fn.delete(dir, 'rf')
end

return M
