-- The stock vim.ui.select blocks in inputlist(): the approval's preview (the diff tab of a
-- file change, the detail float of an escalation) must be on the screen when the choice is
-- asked. A real Neovim runs the plugin against the real server in a terminal (tmux, 100x30);
-- its screen is captured while it waits in inputlist(), then the answer is typed.
local h = require('helpers')

local NVIM = vim.v.progpath
local socket = 'conclave-test-' .. vim.fn.getpid()
local screen

local function tmux(...)
  local result = vim.system({ 'tmux', '-L', socket, ... }, { text = true }):wait()
  assert(result.code == 0, 'tmux ' .. table.concat({ ... }, ' ') .. ': ' .. (result.stderr or ''))
  return result.stdout
end

--- Neovim in a terminal, with the plugin set up on `dir`.
local function terminal(dir)
  -- Not the first run in this folder: the server's one-time note about creating
  -- .conclave/ (a long message, a hit-enter prompt) is not what these tests look at.
  vim.fn.mkdir(dir .. '/.conclave', 'p')
  local init = dir .. '/init.lua'
  local fd = assert(io.open(init, 'w'))
  fd:write(([[
    vim.opt.runtimepath:prepend(%q)
    vim.opt.swapfile = false
    vim.opt.shadafile = 'NONE'
    vim.cmd('runtime plugin/conclave.lua')
    require('conclave').setup({ cmd = { %q, 'serve', '--stdio' } })
  ]]):format(h.plugin_dir, h.bin))
  fd:close()
  local command = ('cd %s && exec %s --clean -u %s'):format(
    vim.fn.shellescape(dir),
    vim.fn.shellescape(NVIM),
    vim.fn.shellescape(init)
  )
  tmux('-f', '/dev/null', 'new-session', '-d', '-x', '100', '-y', '30', command)
  h.wait('Neovim to start in the terminal', function()
    return screen():find('~', 1, true) ~= nil
  end, 20000)
end

screen = function()
  return tmux('capture-pane', '-p')
end

--- Waits until Neovim blocks in inputlist() (its prompt on screen); returns the screen.
local function asked()
  local text
  h.wait('the choice to be asked', function()
    text = screen()
    return text:find('Type number and <Enter>', 1, true) ~= nil
  end)
  return text
end

local function submit(description)
  tmux('send-keys', ':Conclave submit ' .. description, 'Enter')
end

describe('the stock vim.ui.select (inputlist) shows the preview before the choice', function()
  local dir

  after_each(function()
    -- our own tmux server (private socket): ends the Neovim in it, which ends its server
    vim.system({ 'tmux', '-L', socket, 'kill-server' }):wait()
    if dir then
      h.wait('the server process to exit', function()
        return #h.server_pids(dir) == 0
      end, 20000)
      vim.fn.delete(dir, 'rf')
      dir = nil
    end
  end)

  it('a file change: the diff is on screen while the choice is asked; 1 approves', function()
    dir = h.workspace({
      { match = 'Plan this task', text = vim.json.encode({ subtasks = { { description = 'Create a.txt' } } }) },
      {
        match = 'Create a.txt',
        toolCalls = { { name = 'file_write', arguments = { path = 'a.txt', content = 'shown in the diff\n' } } },
      },
      { match = 'created a.txt', text = 'Wrote a.txt.' },
    }, '[approvals]\nfileChanges = "ask"\n[recovery]\nstepTimeoutMs = 120000')
    terminal(dir)
    submit('Create a.txt')
    local text = asked()
    assert.truthy(text:find('shown in the diff', 1, true), 'the proposed content is on screen:\n' .. text)
    assert.truthy(text:find('Conclave fileChange', 1, true), 'the prompt is asked:\n' .. text)
    assert.is_nil(h.read(dir .. '/a.txt'), 'nothing written before the answer')
    tmux('send-keys', '1', 'Enter')
    h.wait('a.txt written after approve', function()
      return h.read(dir .. '/a.txt') == 'shown in the diff\n'
    end)
  end)

  it('an escalation: the detail float is on screen while the choice is asked; Esc leaves it pending', function()
    dir = h.workspace({
      { match = 'Plan this task', text = vim.json.encode({ subtasks = { { description = 'Create c.txt' } } }) },
      { match = 'Create c.txt', error = 'unauthorized', ['repeat'] = true },
    })
    terminal(dir)
    submit('Create c.txt')
    local text = asked()
    assert.truthy(text:find('Severity: critical', 1, true), 'the detail float is on screen:\n' .. text)
    assert.truthy(text:find('Conclave escalation', 1, true), 'the prompt is asked:\n' .. text)
    tmux('send-keys', 'Enter') -- empty: cancels
    h.wait('the approval left pending', function()
      return screen():find('left pending', 1, true) ~= nil
    end)
  end)
end)
