-- The README's picture of Neovim, made the way a person would see it: the plugin in a real
-- TUI Neovim (in tmux), a task submitted with :Conclave submit and finished by the real
-- server on a priced scripted model, the file it wrote beside the tasks view. The test
-- asserts what is on the screen (the finished task with its cost and checks, the statusline,
-- no prompt left open) and writes the picture: to $README_IMAGES/neovim.png when that is set
-- (docs/images renews the README's), else beside the test's other output.
local h = require('helpers')
local screen = require('screen')

local WIDTH, HEIGHT = 110, 30
local TASK = 'Write slug.py with slugify(title): the words of title, lower-case, joined by hyphens'
local SLUG = table.concat({
  'import re',
  '',
  '',
  'def slugify(title: str) -> str:',
  '    """The words of `title`, lower-case, joined by hyphens."""',
  '    words = re.findall(r"[a-z0-9]+", title.lower())',
  '    return "-".join(words)',
  '',
}, '\n')

local function artifacts()
  local dir = vim.env.README_IMAGES or (h.plugin_dir .. '/tests/artifacts')
  vim.fn.mkdir(dir, 'p')
  return dir
end

describe('the README picture of Neovim', function()
  local dir, shown

  after_each(function()
    if shown then
      shown:stop()
      shown = nil
    end
    if dir then
      h.wait('the server process to exit', function()
        return #h.server_pids(dir) == 0
      end, 20000)
      vim.fn.delete(dir, 'rf')
      dir = nil
    end
  end)

  it('shows a finished task with what it cost and how it was checked, and nothing left open', function()
    local missing = screen.missing_tools()
    if #missing > 0 then
      assert(not vim.env.CI, 'the picture needs ' .. table.concat(missing, ' and ') .. ' (install them; CI does)')
      pending('needs ' .. table.concat(missing, ' and '))
      return
    end
    dir = h.workspace(
      {
        { match = 'Plan this task', text = vim.json.encode({ subtasks = { { description = TASK } } }) },
        {
          match = 'Write slug.py',
          toolCalls = { { name = 'file_write', arguments = { path = 'slug.py', content = SLUG } } },
        },
        {
          match = 'created slug.py',
          text = 'Wrote slug.py: slugify lower-cases the title and joins its words with hyphens.',
        },
      },
      table.concat({
        'writes = "disk"',
        '[pricing."scripted"]',
        'input = 1.0',
        'output = 2.0',
        '[verify]',
        'acceptanceTests = false',
      }, '\n')
    )
    -- A first start in a folder says, at length, that it made .conclave/: a picture of a
    -- second day leaves that out.
    vim.fn.mkdir(dir .. '/.conclave', 'p')
    shown = screen.start(
      dir,
      table.concat({
        'vim.opt.rtp:prepend(' .. vim.inspect(h.plugin_dir) .. ')',
        'vim.o.termguicolors = true',
        'vim.o.shortmess = vim.o.shortmess .. "I"',
        'vim.o.laststatus = 2',
        [[vim.o.statusline = ' %f %= %{v:lua.require("conclave").status()} ']],
        'require("conclave").setup({ cmd = { ' .. vim.inspect(h.bin) .. ', "serve", "--stdio" } })',
      }, '\n'),
      WIDTH,
      HEIGHT
    )
    shown:lua('require("conclave").start()')
    h.wait('the server to initialize', function()
      return shown:lua([[
        local client = require('conclave.client').clients()[1]
        return client ~= nil and require('conclave.client').is_ready(client)
      ]])
    end, 30000)

    shown:lua('vim.cmd("Conclave submit " .. ...)', TASK)
    h.wait('the task to complete', function()
      return shown:lua([[
        local entry = require('conclave.tasks').list()[1]
        return entry ~= nil and entry.task.status == 'completed'
      ]])
    end)
    -- The file the task wrote, and the tasks view below it.
    shown:lua([[
      vim.cmd('silent! only')
      vim.cmd.edit('slug.py')
      vim.cmd('Conclave tasks')
    ]])
    h.wait('the tasks view', function()
      return shown:lua('return vim.bo.filetype') == 'conclave-tasks'
    end, 10000)

    local ansi = shown:capture()
    local text = screen.text(ansi)
    assert.matches('def slugify%(title: str%) %-> str:', text)
    assert.matches('completed', text)
    assert.matches('%$%d+%.%d+', text, 'the task shows what it cost')
    assert.matches('checks', text:lower(), 'the task shows how it was checked')
    for _, open in ipairs({ 'Approve', 'Reject', 'Press ENTER', 'E%d+:' }) do
      assert.is_nil(text:find(open), 'nothing left open on the screen: ' .. open)
    end

    local colours = shown:lua([[
      local normal = vim.api.nvim_get_hl(0, { name = 'Normal', link = false })
      return { fg = normal.fg, bg = normal.bg }
    ]])
    local function hex(n, fallback)
      return n and string.format('#%06x', n) or fallback
    end
    local png = artifacts() .. '/neovim.png'
    vim.fn.delete(png)
    screen.photograph(
      screen.html(ansi, WIDTH, hex(colours.fg, '#e0e2ea'), hex(colours.bg, '#14161b')),
      png,
      math.ceil(9.1 * WIDTH),
      19 * HEIGHT
    )
    local written = io.open(png, 'rb')
    assert(written, 'the picture was written')
    local header = written:read(8)
    written:close()
    assert.are.equal('\137PNG\r\n\26\n', header)
    print('# picture of Neovim: ' .. png)
  end)
end)
